# AX Code's hook invocation, spoken as Claude Code's (twin of aipager/hookpy/axcode.py).
#
# TWIN OF aipager/hookpy/axcode.py:
#   ax_adapt = ax_adapt
#   ax_invoked = ax_invoked
#   ax_refusal = ax_refusal
#
# AX Code (both hook forms: legacy, and "protocol": "claude-code") writes only
# the event's own JSON on stdin: a tool's arguments for a tool event, e.g.
# {"prompt":..} for UserPromptSubmit; event, tool id and session id come in
# $HOOK_EVENT, $HOOK_TOOL and $HOOK_SESSION_ID, and the hook runs in the
# project folder.  ax_adapt swaps stdin for the object Claude Code would send:
#     tool event: {"hook_event_name":E,"tool_name":T,"tool_input":<stdin verbatim>,"cwd":C[,"session_id":S]}
#     any other:  <stdin object up to its "}">[,]"hook_event_name":E,"cwd":C[,"session_id":S]}
# (T: Claude Code's name for AX's tool, AXCODE_TOOL_NAMES) so every later step
# sees a normal event.  Strings are spelled as jsonlite.dumps does (ASCII
# only, lowercase \uXXXX, surrogate pairs), so the twins' datagrams stay
# byte-identical.  Anything odd declines to the twin.  ax_refusal gives AX a
# refusal written as Claude Code JSON as exit 2 + the reason on stderr.

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


cdef const char* ax_tool_name(const char* tool) noexcept nogil:
    """axcode.TOOL_NAMES.get(tool, tool)."""
    cdef int i
    for i in range(AXCODE_TOOL_NAMES_N):
        if strcmp(tool, AXCODE_TOOL_NAMES[i].ax) == 0:
            return AXCODE_TOOL_NAMES[i].claude
    return tool


cdef int ax_add_where(Buf* out) noexcept nogil:
    """Append cwd and session_id as axcode._where does: 0, -1 decline."""
    cdef char cwd[PATH_CAP]
    cdef const char* session_id
    if getcwd(cwd, PATH_CAP) == NULL:
        return -1
    buf_adds(out, ",\"cwd\":")
    if ax_add_string(out, cwd) < 0:
        return -1
    session_id = getenv("HOOK_SESSION_ID")
    if session_id != NULL and session_id[0] != 0:
        buf_adds(out, ",\"session_id\":")
        if ax_add_string(out, session_id) < 0:
            return -1
    return 0


cdef int ax_adapt(Buf* raw) noexcept nogil:
    """Replace raw with the Claude-shaped event when it is AX's stdin
    (hookpy/axcode.py ax_adapt): 0 done or not AX's shape, -1 decline."""
    cdef const char* event = getenv("HOOK_EVENT")
    cdef const char* tool = getenv("HOOK_TOOL")
    cdef bint is_tool = ax_tool_event(event)
    cdef JSpan top
    cdef JSpan val
    cdef JSpan key
    cdef size_t pos = 0
    cdef Buf out
    if (is_tool and (tool == NULL or tool[0] == 0)) or not env_event_valid(event):
        return 0
    if js_skip_ws(<const unsigned char*>raw.p, raw.n, 0) == raw.n:
        return 0  # empty: the usual checks decide (fail closed)
    if raw.n > WIRE_MAX_DATAGRAM or js_parse(raw.p, raw.n, &top) < 0:
        return -1  # the twin parses more (NaN, depth) and shrinks
    if top.kind != JS_OBJECT or js_find_key(&top, "hook_event_name", 15, &val) != 0:
        return 0
    if is_tool and js_find_key(&top, "tool_name", 9, &val) != 0:
        return 0
    out.p = NULL
    out.n = 0
    out.cap = 0
    out.oom = 0
    if is_tool:
        buf_adds(&out, "{\"hook_event_name\":")
        ax_add_string(&out, event)
        buf_adds(&out, ",\"tool_name\":")
        if ax_add_string(&out, ax_tool_name(tool)) < 0:
            buf_free(&out)
            return -1
        buf_adds(&out, ",\"tool_input\":")
        buf_add(&out, top.p, top.n)
    else:
        buf_add(&out, top.p, top.n - 1)
        if js_object_next(&top, &pos, &key, &val) == 1:
            buf_adds(&out, ",")
        buf_adds(&out, "\"hook_event_name\":")
        ax_add_string(&out, event)
    if ax_add_where(&out) < 0:
        buf_free(&out)
        return -1
    buf_adds(&out, "}")
    if out.oom or out.n > WIRE_MAX_DATAGRAM:
        buf_free(&out)
        return -1
    buf_free(raw)
    raw[0] = out
    return 0


cdef bint ax_invoked() noexcept nogil:
    """AX Code ran this hook: $HOOK_EVENT names an event."""
    return env_event_valid(getenv("HOOK_EVENT"))


cdef int ax_refusal(HookOut* out, Buf* err) noexcept nogil:
    """axcode.ax_refusal in place: a Claude Code refusal in out becomes
    out.len 0, exit 2 and "<reason>\\n" in err; 1 when it did, else 0."""
    cdef JSpan top
    cdef JSpan nested
    cdef JSpan val
    cdef JSpan reason
    cdef char text[HOOK_OUT_CAP]
    cdef long n = -1
    cdef int found = 0
    if out.len == 0 or js_parse(out.buf, out.len, &top) < 0 or top.kind != JS_OBJECT:
        return 0
    if js_find_key(&top, "hookSpecificOutput", 18, &nested) == 1 and nested.kind == JS_OBJECT \
            and js_find_key(&nested, "permissionDecision", 18, &val) == 1 \
            and val.kind == JS_STRING and js_string_eq(&val, "deny", 4):
        found = js_find_key(&nested, "permissionDecisionReason", 24, &reason)
    elif js_find_key(&top, "decision", 8, &val) == 1 and val.kind == JS_STRING \
            and js_string_eq(&val, "block", 5):
        found = js_find_key(&top, "reason", 6, &reason)
    else:
        return 0
    if found == 1 and reason.kind == JS_STRING:
        n = js_decode_cstr(&reason, text, HOOK_OUT_CAP)
    if n > 0:
        buf_add(err, text, <size_t>n)
    else:
        buf_adds(err, AXCODE_REFUSED)
    buf_adds(err, "\n")
    out.len = 0
    out.exit_code = 2
    return 1
