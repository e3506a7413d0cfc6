# PreModelSwitch in the compiled hook: the C twin of aipager/policy/marker.py
# (claim, _matches, allow_output).  Allow only the switch aipager itself
# typed, once: the marker is our own regular file, unexpired, for this
# session and Claude session id, its model is the requested one, and the
# claim is an atomic rename.  Declines (nothing changed yet) where Python's
# reading could differ: JSON this side does not parse, true/false where a
# number is expected (Python counts them), non-ASCII models (str.lower).
#
# TWIN OF aipager/policy/marker.py:
#   mk_matches = _matches
#   mk_model_switch = claim
#

cdef extern from *:
    """
    /* marker.allow_output() */
    static const char MK_ALLOW[] = "{\\"hookSpecificOutput\\":{\\"hookEventName\\":\\"PreModelSwitch\\",\\"permissionDecision\\":\\"allow\\",\\"permissionDecisionReason\\":\\"Model switch requested from aipager (Telegram / Mini App)\\"}}";
    """
    const char MK_ALLOW[]

cdef enum:
    # marker.MAX_MARKER
    MK_MAX = 4096
    # marker.TTL_SECONDS
    MK_TTL = 30


cdef bint mk_ascii_ieq(const char* a, const char* b) noexcept nogil:
    """a.lower() == b.lower() for ASCII strings."""
    cdef char x
    cdef char y
    while a[0] and b[0]:
        x = <char>(a[0] + 32) if (a[0] >= c'A' and a[0] <= c'Z') else a[0]
        y = <char>(b[0] + 32) if (b[0] >= c'A' and b[0] <= c'Z') else b[0]
        if x != y:
            return False
        a += 1
        b += 1
    return a[0] == b[0]


cdef int mk_string(const JSpan* obj, const char* key, char* dst, size_t cap) noexcept nogil:
    """obj[key] decoded: 1 an ASCII string without NUL, 0 absent or not a
    string, -1 a string this side cannot compare exactly."""
    cdef JSpan v
    if js_find_key(obj, key, strlen(key), &v) != 1 or v.kind != JS_STRING:
        return 0
    if js_decode_cstr(&v, dst, cap) < 0 or not pol_ascii(dst):
        return -1
    return 1


cdef int mk_matches(const HookCtx* ctx, const JSpan* doc, double now) noexcept nogil:
    """marker._matches: 1, 0, or -1 to decline."""
    cdef char s[MK_MAX]
    cdef char model[MK_MAX]
    cdef char wanted[MK_MAX]
    cdef JSpan v
    cdef double d
    cdef int r
    cdef int k
    v.kind = JS_NONE
    if js_find_key(doc, "v", 1, &v) != 1 or v.kind != JS_NUMBER or js_to_double(&v, &d) < 0 or d != 1.0:
        return -1 if v.kind == JS_TRUE else 0
    r = mk_string(doc, "session", s, MK_MAX)
    if r <= 0:
        return r
    if strcmp(s, ctx.session) != 0:
        return 0
    js_find_key(doc, "expires_at", 10, &v)
    if js_to_double(&v, &d) < 0 or now > d or d - now > MK_TTL + 5:
        return 0
    r = mk_string(doc, "claude_session_id", s, MK_MAX)
    if r <= 0:
        return r
    k = mk_string(&ctx.top, "session_id", wanted, MK_MAX)
    if k <= 0:
        return k
    if s[0] == 0 or strcmp(s, wanted) != 0:
        return 0
    r = mk_string(doc, "model", model, MK_MAX)
    if r <= 0:
        return r
    if model[0] == 0:
        return 0
    r = 0
    for k in range(2):
        v.kind = JS_NONE
        js_find_key(&ctx.top, "to_model" if k else "requested_model", 8 if k else 15, &v)
        if v.kind != JS_STRING:
            continue
        if js_decode_cstr(&v, wanted, MK_MAX) < 0 or not pol_ascii(wanted):
            return -1
        if mk_ascii_ieq(wanted, model):
            return 1
    return 0


cdef int mk_model_switch(const HookCtx* ctx, HookOut* out) noexcept nogil:
    """hookside.before_forward for PreModelSwitch: STEP_PRINT (allow),
    STEP_OK (print nothing) or STEP_DECLINE."""
    cdef char path[PATH_CAP]
    cdef char claimed[PATH_CAP]
    # one byte over MAX_MARKER tells "exactly the limit" from "over it"
    cdef char data[MK_MAX + 2]
    cdef char again[MK_MAX + 2]
    cdef unsigned char rnd[4]
    cdef timespec ts
    cdef JSpan doc
    cdef JSpan v
    cdef double now
    cdef double d
    cdef long n
    cdef long m
    cdef int fd
    cdef int r
    out.reason = "policy: the model-switch marker needs the Python twin"
    if js_find_key(&ctx.top, "source", 6, &v) != 1 or not js_string_eq(&v, "command", 7):
        return STEP_OK
    if snprintf(path, PATH_CAP, "%s/aipager-modelswitch-%s.json", ctx.control_dir, ctx.session) >= PATH_CAP:
        return STEP_DECLINE
    n = pol_read_own(path, data, MK_MAX + 2)
    if n < 0:
        # absent, not our own regular file, or over MAX_MARKER: read_own's None
        return STEP_OK
    if js_parse(data, <size_t>n, &doc) < 0:
        return STEP_DECLINE
    clock_gettime(CLOCK_REALTIME, &ts)
    now = <double>ts.tv_sec + <double>ts.tv_nsec / 1e9
    if doc.kind == JS_OBJECT and js_find_key(&doc, "expires_at", 10, &v) == 1:
        if v.kind == JS_TRUE or v.kind == JS_FALSE:
            return STEP_DECLINE
        if js_to_double(&v, &d) == 0 and now > d:
            unlink(path)  # stale: nobody may use it later
            return STEP_OK
    if doc.kind != JS_OBJECT:
        return STEP_OK
    r = mk_matches(ctx, &doc, now)
    if r < 0:
        return STEP_DECLINE
    if r == 0:
        return STEP_OK
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
    if fd < 0 or read(fd, rnd, 4) != 4:
        if fd >= 0:
            close(fd)
        return STEP_DECLINE
    close(fd)
    if snprintf(claimed, PATH_CAP, "%s.claimed-%d-%02x%02x%02x%02x", path, <int>getpid(),
                rnd[0], rnd[1], rnd[2], rnd[3]) >= PATH_CAP:
        return STEP_DECLINE
    if rename(path, claimed) != 0:
        return STEP_OK  # another hook won the claim
    # the file renamed must be the one validated (not swapped in between)
    m = pol_read_own(claimed, again, MK_MAX + 2)
    unlink(claimed)
    if m != n or memcmp(again, data, <size_t>n) != 0:
        return STEP_OK
    n = <long>strlen(MK_ALLOW)
    memcpy(out.buf, MK_ALLOW, <size_t>n)
    out.len = <size_t>n
    out.exit_code = 0
    return STEP_PRINT
