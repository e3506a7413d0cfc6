# AX Code's tool-hook stdin, reshaped into Claude Code's (twin of aipager/hookpy/axcode.py).
#
# TWIN OF aipager/hookpy/axcode.py:
#   ax_adapt = ax_adapt
#
# AX Code ("protocol": "claude-code", spec seeds/004) writes only the tool's
# JSON arguments on a tool hook's stdin; event, tool id and session id come in
# $HOOK_EVENT, $HOOK_TOOL and $HOOK_SESSION_ID, and the hook runs in the
# project folder.  ax_adapt swaps stdin for the object Claude Code would send:
#     {"hook_event_name":E,"tool_name":T,"tool_input":<stdin verbatim>,"cwd":C[,"session_id":S]}
# so every later step sees a normal event.  Strings are spelled as
# jsonlite.dumps does (ASCII only, lowercase \uXXXX, surrogate pairs), so the
# twins' datagrams stay byte-identical.  Anything odd declines to the twin.

from posix.unistd cimport getcwd


cdef bint ax_tool_event(const char* e) noexcept nogil:
    """e is one of axcode.TOOL_EVENTS."""
    cdef int i
    if e == NULL:
        return False
    for i in range(AXCODE_TOOL_EVENTS_N):
        if strcmp(e, AXCODE_TOOL_EVENTS[i]) == 0:
            return True
    return False


cdef int ax_add_string(Buf* b, const char* s) noexcept nogil:
    """s as a JSON string in jsonlite.dumps' spelling: 0, -1 when s is not strict UTF-8."""
    cdef const unsigned char* u = <const unsigned char*>s
    cdef size_t n = strlen(s)
    cdef size_t i = 0
    cdef size_t k
    cdef unsigned int cp
    cdef unsigned char c
    cdef char esc[16]
    cdef int w
    buf_adds(b, "\"")
    while i < n:
        c = u[i]
        if c >= 0x80:
            k = js_utf8_len(u, n, i)
            if k == 0:
                return -1
            if k == 2:
                cp = c & 0x1F
            elif k == 3:
                cp = c & 0x0F
            else:
                cp = c & 0x07
            for w in range(1, <int>k):
                cp = (cp << 6) | (u[i + <size_t>w] & 0x3F)
            i += k
        else:
            i += 1
            cp = c
            if c >= 0x20 and c <= 0x7E and c != c'"' and c != c'\\':
                buf_add(b, <const char*>&u[i - 1], 1)
                continue
            esc[1] = 0
            if c == c'"' or c == c'\\':
                esc[1] = <char>c
            elif c == c'\n':
                esc[1] = c'n'
            elif c == c'\r':
                esc[1] = c'r'
            elif c == c'\t':
                esc[1] = c't'
            elif c == 8:
                esc[1] = c'b'
            elif c == 12:
                esc[1] = c'f'
            if esc[1] != 0:
                esc[0] = c'\\'
                buf_add(b, esc, 2)
                continue
        if cp >= 0x10000:
            cp -= 0x10000
            w = snprintf(esc, sizeof(esc), "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF))
        else:
            w = snprintf(esc, sizeof(esc), "\\u%04x", cp)
        buf_add(b, esc, <size_t>w)
    buf_adds(b, "\"")
    return 0


cdef int ax_adapt(Buf* raw) noexcept nogil:
    """Replace raw with the Claude-shaped event when it is AX's arguments-only
    stdin (hookpy/axcode.py ax_adapt): 0 done or not AX's shape, -1 decline."""
    cdef const char* event = getenv("HOOK_EVENT")
    cdef const char* tool = getenv("HOOK_TOOL")
    cdef const char* session_id
    cdef char cwd[PATH_CAP]
    cdef JSpan top
    cdef JSpan val
    cdef Buf out
    if not ax_tool_event(event) or tool == NULL or tool[0] == 0:
        return 0
    if js_skip_ws(<const unsigned char*>raw.p, raw.n, 0) == raw.n:
        return 0  # empty: the usual checks decide (fail closed)
    if raw.n > WIRE_MAX_DATAGRAM or js_parse(raw.p, raw.n, &top) < 0:
        return -1  # the twin parses more (NaN, depth) and shrinks
    if top.kind != JS_OBJECT or js_find_key(&top, "hook_event_name", 15, &val) != 0 \
            or js_find_key(&top, "tool_name", 9, &val) != 0:
        return 0
    if getcwd(cwd, PATH_CAP) == NULL:
        return -1
    out.p = NULL
    out.n = 0
    out.cap = 0
    out.oom = 0
    buf_adds(&out, "{\"hook_event_name\":")
    ax_add_string(&out, event)
    buf_adds(&out, ",\"tool_name\":")
    if ax_add_string(&out, tool) < 0:
        buf_free(&out)
        return -1
    buf_adds(&out, ",\"tool_input\":")
    buf_add(&out, top.p, top.n)
    buf_adds(&out, ",\"cwd\":")
    if ax_add_string(&out, cwd) < 0:
        buf_free(&out)
        return -1
    session_id = getenv("HOOK_SESSION_ID")
    if session_id != NULL and session_id[0] != 0:
        buf_adds(&out, ",\"session_id\":")
        if ax_add_string(&out, session_id) < 0:
            buf_free(&out)
            return -1
    buf_adds(&out, "}")
    if out.oom or out.n > WIRE_MAX_DATAGRAM:
        buf_free(&out)
        return -1
    buf_free(raw)
    raw[0] = out
    return 0
