# A PermissionRequest or an Elicitation answered from the chat: the reply wait.
#
# TWIN OF aipager/hookpy/reply.py:
#   reply_deadline_ms = deadline_ms
#   reply_wait_ms = wait_ms
#   reply_wanted = wanted
#   reply_path_usable = _usable_path
#   put_compact = compact
#   reply_answer = _answer
#   reply_decision = decision_output
#   reply_elicitation = elicitation_output
#   reply_wait = Reply.wait
#   reply_timeout_msg = timeout_message
#
# The C twin of aipager/hookpy/reply.py, whose module docstring is the spec
# (which events wait and how long, what a valid reply of each form is, how it
# is re-encoded so both twins print the same bytes).  In short:
#
#   reply_wanted(name, &top)              does this event wait at all
#   reply_prepare(&r, dir, elicitation)   id + path + deadline, or 0: no wait (forward as before)
#   reply_fields(&r, &dg)                 ,"aipager_reply_addr":"..","aipager_request_id":".."
#   reply_bind(&r)                        the 0600 socket; -1: no wait after all
#   reply_wait(&r, &out)                  1: out holds the decision / the form's answer to print
#   reply_close(&r)                       close + unlink (always)
#
# Everything here is plain C: a reply is validated with json.pxi and the
# answer is copied from its raw bytes, never decoded and re-encoded.

cdef extern from "<sys/socket.h>" nogil:
    int bind(int fd, const sockaddr* addr, socklen_t alen)
    ssize_t recv(int fd, void* buf, size_t n, int flags)

cdef extern from "<sys/stat.h>" nogil:
    ctypedef unsigned int mode_t
    mode_t umask(mode_t mask)

cdef extern from "<sys/random.h>" nogil:
    ssize_t getrandom(void* buf, size_t n, unsigned int flags)

cdef extern from "<poll.h>" nogil:
    struct pollfd:
        int fd
        short events
        short revents
    enum:
        POLLIN
    int poll(pollfd* fds, unsigned long nfds, int timeout)

cdef extern from "<time.h>" nogil:
    enum:
        CLOCK_MONOTONIC

# The limits (REPLY_DEFAULT_MS, REPLY_MIN_MS, REPLY_MAX_MS, REPLY_ELICITATION_DEFAULT_MS,
# REPLY_ELICITATION_MAX_MS, REPLY_SUN_PATH_MAX, WIRE_REPLY_MAX, WIRE_MAX_BRACKETS),
# the deadline variables (REPLY_PERMISSION_VAR, REPLY_ELICITATION_VAR) and the
# event names come from aipager.hookpy.reply and aipager.proto.wire through wire.pxi.
cdef enum:
    REPLY_ID_LEN = 32

cdef extern from *:
    """
    #include "wire_constants.h"
    /* paths.reply_socket's name: REPLY_PREFIX + the request id + ".sock" */
    #define REPLY_NAME_FMT PATHS_REPLY_PREFIX "%s.sock"
    /* reply.py _PREFIX and _ELICITATION_PREFIX: joined by the preprocessor (module
       init never runs in the ELF, so no module-level variable could hold them) */
    #define REPLY_DECISION_PREFIX "{\\"hookSpecificOutput\\":{\\"hookEventName\\":\\"" WIRE_EVENT_PERMISSION_REQUEST "\\",\\"decision\\":{\\"behavior\\":\\""
    #define REPLY_ELICITATION_PREFIX "{\\"hookSpecificOutput\\":{\\"hookEventName\\":\\"" WIRE_EVENT_ELICITATION "\\",\\"action\\":\\""
    """
    const char REPLY_NAME_FMT[]
    const char REPLY_DECISION_PREFIX[]
    const char REPLY_ELICITATION_PREFIX[]

ctypedef struct Reply:
    int fd
    bint elicitation  # which reply form counts: reply_elicitation, else reply_decision
    long ms           # the deadline, reply_wait_ms
    char id[REPLY_ID_LEN + 1]
    char path[PATH_CAP]



cdef long reply_deadline_ms(const char* var, long dflt, long maxms) noexcept nogil:
    """reply.deadline_ms: $var (DIGITS[.DIGITS] seconds), else dflt; clamped to REPLY_MIN_MS..maxms."""
    cdef const char* s = getenv(var)
    cdef size_t i = 0
    cdef size_t k
    cdef long whole = 0
    cdef long frac = 0
    cdef long ms
    if s == NULL:
        return dflt
    while s[i] >= c'0' and s[i] <= c'9':
        if i < 9:
            whole = whole * 10 + (s[i] - c'0')
        i += 1
    if i == 0 or i > 9:
        return dflt
    if s[i] == c'.':
        i += 1
        k = 0
        while s[i] >= c'0' and s[i] <= c'9':
            if k < 3:
                frac = frac * 10 + (s[i] - c'0')
            k += 1
            i += 1
        if k == 0:
            return dflt
        while k < 3:
            frac *= 10
            k += 1
    if s[i] != 0:
        return dflt
    ms = whole * 1000 + frac
    if ms == 0:
        return 0
    if ms < REPLY_MIN_MS:
        return REPLY_MIN_MS
    return maxms if ms > maxms else ms


cdef long reply_wait_ms(bint elicitation) noexcept nogil:
    """reply.wait_ms: an Elicitation's deadline, else a PermissionRequest's; 0: no wait."""
    if elicitation:
        return reply_deadline_ms(REPLY_ELICITATION_VAR, REPLY_ELICITATION_DEFAULT_MS, REPLY_ELICITATION_MAX_MS)
    return reply_deadline_ms(REPLY_PERMISSION_VAR, REPLY_DEFAULT_MS, REPLY_MAX_MS)


cdef bint reply_path_usable(const char* p) noexcept nogil:
    """Plain printable ASCII without '"' and '\\' (spliced into JSON verbatim), fits sun_path."""
    cdef size_t n = strlen(p)
    cdef size_t i
    cdef unsigned char c
    if n > REPLY_SUN_PATH_MAX:
        return False
    for i in range(n):
        c = <unsigned char>p[i]
        if c < 0x20 or c > 0x7e or c == c'"' or c == c'\\':
            return False
    return True


cdef bint reply_wanted(const char* name, const JSpan* top) noexcept nogil:
    """reply.wanted: an Elicitation always; a PermissionRequest but for AskUserQuestion
    (its PreToolUse shows the question; no tap answers it here); no other event."""
    cdef JSpan v
    if strcmp(name, WIRE_EVENT_ELICITATION) == 0:
        return True
    if strcmp(name, WIRE_EVENT_PERMISSION_REQUEST) != 0:
        return False
    return not (js_find_key(top, "tool_name", 9, &v) == 1 and js_string_eq(&v, "AskUserQuestion", 15))


cdef int reply_prepare(Reply* r, const char* control_dir, bint elicitation, int debug) noexcept nogil:
    """A fresh id, socket path and deadline for the event (an Elicitation, else a
    PermissionRequest): 1, or 0 when no wait can happen (nothing changed on disk)."""
    cdef unsigned char rnd[16]
    cdef char name[64]
    cdef int dfd
    cdef struct_stat st
    cdef int i
    cdef const char* hexd = "0123456789abcdef"
    r.fd = -1
    r.elicitation = elicitation
    r.ms = reply_wait_ms(elicitation)
    r.id[0] = 0
    r.path[0] = 0
    if r.ms == 0 or control_dir[0] != c'/':
        return 0
    dfd = open(control_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    if dfd < 0:
        dbg(debug, "aipager-hook", "no reply folder:", control_dir)
        return 0
    if fstat(dfd, &st) < 0 or st.st_uid != geteuid():
        close(dfd)
        dbg(debug, "aipager-hook", "reply folder not ours:", control_dir)
        return 0
    close(dfd)
    if getrandom(rnd, 16, 0) != 16:
        return 0
    for i in range(16):
        r.id[2 * i] = hexd[rnd[i] >> 4]
        r.id[2 * i + 1] = hexd[rnd[i] & 15]
    r.id[REPLY_ID_LEN] = 0
    snprintf(name, sizeof(name), REPLY_NAME_FMT, r.id)
    if path_join(r.path, PATH_CAP, control_dir, name) < 0 or not reply_path_usable(r.path):
        dbg(debug, "aipager-hook", "reply socket path unusable:", control_dir)
        r.path[0] = 0
        return 0
    return 1


cdef void reply_fields(const Reply* r, Buf* dg) noexcept nogil:
    buf_adds(dg, ",\"aipager_reply_addr\":\"")
    buf_adds(dg, r.path)
    buf_adds(dg, "\",\"aipager_request_id\":\"")
    buf_adds(dg, r.id)
    buf_adds(dg, "\"")


cdef int reply_bind(Reply* r, int debug) noexcept nogil:
    """Bind the reply socket 0600: 0, or -1 (then there is nothing to close)."""
    cdef sockaddr_un addr
    cdef size_t k = strlen(r.path)
    cdef mode_t old
    cdef int rc
    r.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)
    if r.fd < 0:
        return -1
    addr.sun_family = AF_UNIX
    memcpy(addr.sun_path, r.path, k + 1)
    old = umask(0o177)  # the socket file is born 0600: only we may answer
    rc = bind(r.fd, <const sockaddr*>&addr, <socklen_t>(2 + k + 1))
    umask(old)
    if rc < 0:
        close(r.fd)
        r.fd = -1
        dbg(debug, "aipager-hook", "cannot bind the reply socket:", r.path)
        return -1
    return 0


cdef void reply_close(Reply* r) noexcept nogil:
    if r.fd >= 0:
        close(r.fd)
        r.fd = -1
        unlink(r.path)


cdef inline void out_add(HookOut* out, const char* s, size_t n) noexcept nogil:
    # callers stay within HOOK_OUT_CAP: a reply is at most WIRE_REPLY_MAX bytes
    if out.len + n <= HOOK_OUT_CAP:
        memcpy(out.buf + out.len, s, n)
        out.len += n


cdef void put_compact(HookOut* out, const char* p, size_t n) noexcept nogil:
    """reply.compact: p[0:n] without the JSON whitespace outside strings."""
    cdef bint in_str = False
    cdef bint esc = False
    cdef size_t i
    cdef char c
    for i in range(n):
        c = p[i]
        if in_str:
            if esc:
                esc = False
            elif c == c'\\':
                esc = True
            elif c == c'"':
                in_str = False
        elif c == c' ' or c == c'\t' or c == c'\n' or c == c'\r':
            continue
        elif c == c'"':
            in_str = True
        out_add(out, &c, 1)


cdef bint reply_answer(const char* data, size_t n, const char* rid, const char* key, size_t keylen,
                       JSpan* body) noexcept nogil:
    """reply._answer: data is a well-formed reply to rid holding the object key (body set to it).

    The checks both forms share (size, brackets, strict JSON, "v":1, our id);
    other top-level members are not looked at."""
    cdef JSpan top
    cdef JSpan v
    cdef size_t i
    cdef size_t brackets = 0
    if n > WIRE_REPLY_MAX:
        return False
    for i in range(n):
        if data[i] == c'{' or data[i] == c'[':
            brackets += 1
    if brackets > WIRE_MAX_BRACKETS:
        return False
    if js_parse(data, n, &top) < 0 or top.kind != JS_OBJECT:
        return False
    if js_find_key(&top, "v", 1, &v) != 1 or v.kind != JS_NUMBER or v.n != 1 or v.p[0] != c'1':
        return False
    if js_find_key(&top, "request_id", 10, &v) != 1 or not js_string_eq(&v, rid, strlen(rid)):
        return False
    return js_find_key(&top, key, keylen, body) == 1 and body.kind == JS_OBJECT


cdef int reply_decision(const char* data, size_t n, const char* rid, HookOut* out) noexcept nogil:
    """reply.decision_output: 1 and out holds the hook's stdout, or 0 (ignore this datagram)."""
    cdef JSpan dec
    cdef JSpan k
    cdef JSpan val
    cdef JSpan beh
    cdef JSpan perms
    cdef JSpan msg
    cdef JSpan intr
    cdef JSpan edited
    cdef bint has_beh = False
    cdef bint has_edited = False
    cdef bint has_perms = False
    cdef bint has_msg = False
    cdef bint has_intr = False
    cdef bint allow
    cdef size_t pos = 0
    cdef int r
    if not reply_answer(data, n, rid, "decision", 8, &dec):
        return 0
    while True:
        r = js_object_next(&dec, &pos, &k, &val)
        if r < 0:
            return 0
        if r == 0:
            break
        if js_string_eq(&k, "behavior", 8):
            beh = val
            has_beh = True
        elif js_string_eq(&k, "updatedInput", 12):
            edited = val
            has_edited = True
        elif js_string_eq(&k, "updatedPermissions", 18):
            perms = val
            has_perms = True
        elif js_string_eq(&k, "message", 7):
            msg = val
            has_msg = True
        elif js_string_eq(&k, "interrupt", 9):
            intr = val
            has_intr = True
        else:
            return 0
    if not has_beh:
        return 0
    if js_string_eq(&beh, "allow", 5):
        allow = True
    elif js_string_eq(&beh, "deny", 4):
        allow = False
    else:
        return 0
    if ((has_edited and edited.kind != JS_OBJECT)
            or (has_perms and perms.kind != JS_ARRAY) or (has_msg and msg.kind != JS_STRING)
            or (has_intr and intr.kind != JS_TRUE and intr.kind != JS_FALSE)):
        return 0
    out.len = 0
    out_add(out, REPLY_DECISION_PREFIX, strlen(REPLY_DECISION_PREFIX))
    if allow:
        out_add(out, "allow\"", 6)
    else:
        out_add(out, "deny\"", 5)
    if has_edited:
        out_add(out, ",\"updatedInput\":", 16)
        put_compact(out, edited.p, edited.n)
    if has_perms:
        out_add(out, ",\"updatedPermissions\":", 22)
        put_compact(out, perms.p, perms.n)
    if has_msg:
        out_add(out, ",\"message\":", 11)
        out_add(out, msg.p, msg.n)
    if has_intr:
        if intr.kind == JS_TRUE:
            out_add(out, ",\"interrupt\":true", 17)
        else:
            out_add(out, ",\"interrupt\":false", 18)
    out_add(out, "}}}", 3)
    return 1


cdef int reply_elicitation(const char* data, size_t n, const char* rid, HookOut* out) noexcept nogil:
    """reply.elicitation_output: 1 and out holds the hook's stdout, or 0 (ignore this datagram)."""
    cdef JSpan body
    cdef JSpan k
    cdef JSpan val
    cdef JSpan action
    cdef JSpan content
    cdef bint has_action = False
    cdef bint has_content = False
    cdef const char* act
    cdef bint accept = False
    cdef size_t pos = 0
    cdef int r
    if not reply_answer(data, n, rid, "elicitation", 11, &body):
        return 0
    while True:
        r = js_object_next(&body, &pos, &k, &val)
        if r < 0:
            return 0
        if r == 0:
            break
        if js_string_eq(&k, "action", 6):
            action = val
            has_action = True
        elif js_string_eq(&k, "content", 7):
            content = val
            has_content = True
        else:
            return 0
    if not has_action:
        return 0
    if js_string_eq(&action, "accept", 6):
        act = "accept"
        accept = True
    elif js_string_eq(&action, "decline", 7):
        act = "decline"
    elif js_string_eq(&action, "cancel", 6):
        act = "cancel"
    else:
        return 0
    # values only come with an accepted form: a declined one carrying them is malformed
    if has_content and (content.kind != JS_OBJECT or not accept):
        return 0
    out.len = 0
    out_add(out, REPLY_ELICITATION_PREFIX, strlen(REPLY_ELICITATION_PREFIX))
    out_add(out, act, strlen(act))
    out_add(out, "\"", 1)
    if has_content:
        out_add(out, ",\"content\":", 11)
        put_compact(out, content.p, content.n)
    out_add(out, "}}", 2)
    return 1


cdef int reply_wait(Reply* r, HookOut* out, int debug) noexcept nogil:
    """reply.Reply.wait: wait up to r.ms for one valid reply of r's form: 1 (out
    filled), 0 timed out or failed."""
    cdef char buf[WIRE_REPLY_MAX + 1]
    cdef timespec now
    cdef long long end_ms
    cdef long long left
    cdef pollfd p
    cdef ssize_t n
    cdef int pr
    clock_gettime(CLOCK_MONOTONIC, &now)
    end_ms = <long long>now.tv_sec * 1000 + now.tv_nsec // 1000000 + r.ms
    p.fd = r.fd
    p.events = POLLIN
    while True:
        clock_gettime(CLOCK_MONOTONIC, &now)
        left = end_ms - (<long long>now.tv_sec * 1000 + now.tv_nsec // 1000000)
        if left > 0:
            p.revents = 0
            pr = poll(&p, 1, <int>left)
            if pr < 0:
                if errno == EINTR:
                    continue
                return 0
            if pr == 0:
                continue  # the loop head decides whether time is up
        # at the deadline, replies already queued still count (reply.py Reply.wait)
        n = recv(r.fd, buf, WIRE_REPLY_MAX + 1, MSG_DONTWAIT)
        if n < 0:
            if errno == EINTR:
                continue
            if errno == EAGAIN and left > 0:
                continue
            return 0
        if r.elicitation:
            if reply_elicitation(buf, <size_t>n, r.id, out):
                return 1
        elif reply_decision(buf, <size_t>n, r.id, out):
            return 1
        dbg(debug, "aipager-hook", "reply ignored", NULL)


cdef void reply_timeout_msg(Buf* b, const char* session, const char* rid) noexcept nogil:
    """reply.timeout_message (for either event: the daemon finds the request by its id)."""
    buf_adds(b, "{\"hook_event_name\":\"")
    buf_adds(b, WIRE_PERMISSION_REPLY_TIMEOUT)
    buf_adds(b, "\",\"session\":\"")
    buf_adds(b, session)
    buf_adds(b, "\",\"aipager_request_id\":\"")
    buf_adds(b, rid)
    buf_adds(b, "\"}")
