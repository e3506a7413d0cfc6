# aipager-hook stage 1: read, splice, forward, run the policy steps.
#
# TWIN OF aipager/hookpy/hook.py:
#   read_status = read_status
#   add_sl_tokens = sl_tokens
#   unusable = _unusable
#   hook_run = _run
#
# TWIN OF aipager/hookpy/common.py:
#   names_pre_tool_use = names_pre_tool_use
#
# Mirrors aipager/hookpy/hook.py step for step.  The datagram is Claude
# Code's own text with keys spliced in before the final "}":
#     <raw up to the closing brace>[,]"session":"S"[,"sl_tokens":{...}]
#     [,"aipager_reply_addr":"..","aipager_request_id":".."]
#     [,"hook_event_name":"<$HOOK_EVENT>"]}
# (trailing whitespace dropped; keys appended last, so with duplicate keys the
# daemon's json.loads keeps ours; the reply keys only on a PermissionRequest
# that waits for the chat's decision, see reply.pxi).  Everything is decided
# BEFORE any side effect, so a decline never repeats one: the reply socket is
# bound after the last reason to decline.

cdef enum:
    NAME_CAP = 128
    # status files above this are ignored (no sl_tokens), in both twins
    STATUS_MAX = 1048576


cdef bint all_ws(const char* s, size_t n) noexcept nogil:
    return js_skip_ws(<const unsigned char*>s, n, 0) == n


cdef bint env_event_valid(const char* s) noexcept nogil:
    """$HOOK_EVENT (AX Code): 1-64 of [A-Za-z0-9_]."""
    cdef size_t n
    cdef size_t i
    cdef char c
    if s == NULL:
        return False
    n = strlen(s)
    if n == 0 or n > 64:
        return False
    for i in range(n):
        c = s[i]
        if not ((c >= c'a' and c <= c'z') or (c >= c'A' and c <= c'Z') or (c >= c'0' and c <= c'9') or c == c'_'):
            return False
    return True


cdef int read_status(const char* path, Buf* out, JSpan* top) noexcept nogil:
    """The session's status file: 1 parsed object, 0 none usable, -1 decline."""
    cdef int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
    cdef struct_stat st
    cdef int r
    if fd < 0:
        return 0
    if fstat(fd, &st) < 0 or not S_ISREG(st.st_mode) or st.st_uid != geteuid() or st.st_size > STATUS_MAX:
        close(fd)
        return 0
    r = read_all(fd, out)
    close(fd)
    if r == -2:
        return -1
    if r < 0 or out.n > STATUS_MAX:
        return 0
    if js_parse(out.p, out.n, top) < 0:
        return -1
    return 1 if top.kind == JS_OBJECT else 0


cdef void add_raw(Buf* b, const JSpan* obj, const char* path) noexcept nogil:
    """The raw JSON token at path, or null."""
    cdef JSpan v
    if js_find_path(obj, path, &v) == 1:
        buf_add(b, v.p, v.n)
    else:
        buf_adds(b, "null")


cdef int add_sl_tokens(Buf* dg, const char* status_path) noexcept nogil:
    """Append ,"sl_tokens":{...} when the status file is usable; -1 to decline."""
    cdef Buf st
    cdef JSpan top
    cdef int r
    st.p = NULL
    st.n = 0
    st.cap = 0
    st.oom = 0
    r = read_status(status_path, &st, &top)
    if r == 1:
        buf_adds(dg, ",\"sl_tokens\":{\"context_pct\":")
        add_raw(dg, &top, "context_window.used_percentage")
        buf_adds(dg, ",\"total_output\":")
        add_raw(dg, &top, "context_window.total_output_tokens")
        buf_adds(dg, ",\"total_input\":")
        add_raw(dg, &top, "context_window.total_input_tokens")
        buf_adds(dg, ",\"current_output\":")
        add_raw(dg, &top, "context_window.current_usage.output_tokens")
        buf_adds(dg, ",\"lines_added\":")
        add_raw(dg, &top, "cost.total_lines_added")
        buf_adds(dg, ",\"lines_removed\":")
        add_raw(dg, &top, "cost.total_lines_removed")
        buf_adds(dg, "}")
    buf_free(&st)
    return -1 if r < 0 else 0


cdef bint names_pre_tool_use(const char* raw, size_t n) noexcept nogil:
    """common.names_pre_tool_use: some "hook_event_name" followed (JSON
    whitespace and one colon between) by "PreToolUse", in the raw bytes."""
    cdef const char* p = raw
    cdef const char* hit
    cdef size_t j
    while <size_t>(p - raw) < n:
        hit = <const char*>memmem(p, n - <size_t>(p - raw), "\"hook_event_name\"", 17)
        if hit == NULL:
            return False
        j = js_skip_ws(<const unsigned char*>raw, n, <size_t>(hit - raw) + 17)
        if j < n and raw[j] == c':':
            j = js_skip_ws(<const unsigned char*>raw, n, j + 1)
            if n - j >= 12 and memcmp(raw + j, "\"PreToolUse\"", 12) == 0:
                return True
        p = hit + 1
    return False


cdef int decline(Sender* snd, const char* session, const char* raw, size_t n, const char* which,
                 int forwarded, int debug, const char* why, const char* event) noexcept nogil:
    """Hand over to stage 2; only returns (with the exit code) if that failed.

    The same exit code goes to stage 2 as --fail-exit, for the case where
    Python starts but cannot run the twin (a broken install): a PreToolUse,
    even one whose JSON could not be read, is then refused, not let through."""
    cdef int fail = policy_fail_exit(event)
    if event == NULL and names_pre_tool_use(raw, n):
        fail = policy_fail_exit("PreToolUse")
    dbg(debug, snd.who, "declined to stage 2:", why)
    stage2_exec(snd, raw, n, which, forwarded, fail, debug)
    report_error(snd, session, snd.who, "stage2_unavailable", "_fasthook/stage2.pxi:stage2_exec")
    return fail


cdef int unusable(Sender* snd, const char* session, const char* raw, size_t n, int debug,
                  const char* why) noexcept nogil:
    """hook.py _unusable: a payload no step can use.  Nothing is sent; a
    PreToolUse (named by $HOOK_EVENT or in the raw bytes) fails closed."""
    cdef const char* v = getenv("HOOK_EVENT")
    cdef char session_dir[PATH_CAP]
    cdef HookCtx ctx
    cdef HookOut out
    dbg(debug, "aipager-hook", why, "nothing sent")
    if not ((v != NULL and strcmp(v, "PreToolUse") == 0) or names_pre_tool_use(raw, n)):
        return 0
    if paths_session_dir(session_dir, PATH_CAP) < 0:
        return decline(snd, session, raw, n, "hook", 0, debug, "path too long", "PreToolUse")
    ctx.raw = raw
    ctx.raw_len = n
    ctx.top.kind = JS_NONE
    ctx.event = "PreToolUse"
    ctx.session = session
    ctx.session_dir = session_dir
    ctx.control_dir = ""
    ctx.envp = NULL
    ctx.debug = debug
    ctx.send = sender_cb
    ctx.send_state = snd
    out.len = 0
    out.exit_code = 0
    out.reason = NULL
    if policy_unusable(&ctx, &out) == STEP_DECLINE:
        return decline(snd, session, raw, n, "hook", 0, debug, out.reason, "PreToolUse")
    if out.len:
        write_all(1, out.buf, out.len)
    return out.exit_code


cdef int hook_run(int argc, char** argv, char** envp) noexcept nogil:
    cdef int debug = 0
    cdef const char* session
    cdef const char* v
    cdef Sender snd
    cdef char capmsg[CAP_MSG]
    cdef size_t capn
    cdef Buf raw
    cdef Buf dg
    cdef JSpan top
    cdef JSpan val
    cdef JSpan k0
    cdef size_t pos = 0
    cdef char name[NAME_CAP]
    cdef long namelen = 0
    cdef bint name_from_env = False
    cdef bint has_members
    cdef char session_dir[PATH_CAP]
    cdef char control_dir[PATH_CAP]
    cdef char status_path[PATH_CAP]
    cdef HookCtx ctx
    cdef HookOut out
    cdef int r
    cdef int sr
    cdef Reply rep
    cdef bint want_reply = False
    cdef size_t rf_off = 0
    cdef size_t rf_len = 0
    cdef int sent = SEND_DROPPED
    cdef Buf tb

    v = getenv("AIPAGER_DEBUG")
    debug = v != NULL and strcmp(v, "1") == 0
    limit_memory()
    session = getenv("CLAUDE_DTACH_SESSION")
    if not session_valid(session):
        # not a session aipager started: costs nothing, says nothing
        dbg(debug, "aipager-hook", "no valid CLAUDE_DTACH_SESSION, nothing sent", NULL)
        return 0
    sr = sender_init(&snd, debug, "aipager-hook")
    capn = cap_msg(capmsg, session, "aipager-hook")

    raw.p = NULL
    raw.n = 0
    raw.cap = 0
    raw.oom = 0
    r = read_all(0, &raw)
    if r == -2:
        return cap_hit(&snd, capmsg, capn, raw.p, raw.n)
    if r < 0:
        report_error(&snd, session, "aipager-hook", "stdin_read", "_fasthook/forward.pxi:hook_run")
        return policy_fail_exit(NULL)
    if ax_adapt(&raw) < 0:  # AX Code's arguments-only stdin -> Claude Code's event
        return decline(&snd, session, raw.p, raw.n, "hook", 0, debug, "odd AX Code input", NULL)
    if all_ws(raw.p, raw.n):
        return unusable(&snd, session, raw.p, raw.n, debug, "empty stdin,")
    if sr < 0:
        return decline(&snd, session, raw.p, raw.n, "hook", 0, debug, "path too long", NULL)
    if raw.n > MAX_DATAGRAM:
        # cannot fit whatever the splice adds: only the twin can shorten it,
        # so do not scan megabytes first
        return decline(&snd, session, raw.p, raw.n, "hook", 0, debug, "event too large", NULL)
    if js_parse(raw.p, raw.n, &top) < 0:
        # Python accepts more (NaN, deeper nesting): it decides
        return decline(&snd, session, raw.p, raw.n, "hook", 0, debug, "not JSON I can parse", NULL)
    if top.kind != JS_OBJECT:
        return unusable(&snd, session, raw.p, raw.n, debug, "not a JSON object,")

    # the event name: hook_event_name, else $HOOK_EVENT (AX Code)
    r = js_find_key(&top, "hook_event_name", 15, &val)
    if r == 1 and val.kind == JS_STRING:
        namelen = js_decode_cstr(&val, name, NAME_CAP)
        if namelen < 0:
            return decline(&snd, session, raw.p, raw.n, "hook", 0, debug, "odd hook_event_name", NULL)
    if namelen == 0:
        v = getenv("HOOK_EVENT")
        if not env_event_valid(v):
            return unusable(&snd, session, raw.p, raw.n, debug, "no hook_event_name,")
        namelen = <long>strlen(v)
        memcpy(name, v, <size_t>namelen + 1)
        name_from_env = True

    if paths_session_dir(session_dir, PATH_CAP) < 0 or paths_status_file(
            status_path, PATH_CAP, session_dir, session) < 0 or path_dirname(
            control_dir, PATH_CAP, snd.spool) < 0:
        return decline(&snd, session, raw.p, raw.n, "hook", 0, debug, "path too long", name)
    # id and path only: the socket is bound after the last reason to decline
    want_reply = (strcmp(name, "PermissionRequest") == 0 and reply_wanted(&top)
                  and reply_prepare(&rep, control_dir, debug) == 1)

    # build the datagram first: every reason to decline comes before any effect
    dg.p = NULL
    dg.n = 0
    dg.cap = 0
    dg.oom = 0
    if strcmp(name, "PreModelSwitch") != 0:
        has_members = js_object_next(&top, &pos, &k0, &val) == 1
        buf_add(&dg, raw.p, <size_t>(top.p - raw.p) + top.n - 1)
        if has_members:
            buf_adds(&dg, ",")
        buf_adds(&dg, "\"session\":\"")
        buf_adds(&dg, session)
        buf_adds(&dg, "\"")
        if strcmp(name, "MessageDisplay") != 0:
            if add_sl_tokens(&dg, status_path) < 0:
                return decline(&snd, session, raw.p, raw.n, "hook", 0, debug, "odd status file", name)
        if want_reply:
            rf_off = dg.n
            reply_fields(&rep, &dg)
            rf_len = dg.n - rf_off
        if name_from_env:
            buf_adds(&dg, ",\"hook_event_name\":\"")
            buf_adds(&dg, name)
            buf_adds(&dg, "\"")
        buf_adds(&dg, "}")
        if dg.oom:
            return cap_hit(&snd, capmsg, capn, raw.p, raw.n)
        if dg.n > MAX_DATAGRAM:
            return decline(&snd, session, raw.p, raw.n, "hook", 0, debug, "event too large", name)

    ctx.raw = raw.p
    ctx.raw_len = raw.n
    ctx.top = top
    ctx.event = name
    ctx.session = session
    ctx.session_dir = session_dir
    ctx.control_dir = control_dir
    ctx.envp = envp
    ctx.debug = debug
    ctx.send = sender_cb
    ctx.send_state = &snd
    out.len = 0
    out.exit_code = 0
    out.reason = NULL

    r = policy_before(&ctx, &out)
    if r == STEP_DECLINE:
        return decline(&snd, session, raw.p, raw.n, "hook", 0, debug,
                       out.reason if out.reason != NULL else <const char*>"policy_before", name)
    if want_reply and reply_bind(&rep, debug) < 0:
        # no socket: forward exactly as without the reply protocol
        memmove(dg.p + rf_off, dg.p + rf_off + rf_len, dg.n - rf_off - rf_len)
        dg.n -= rf_len
        dg.p[dg.n] = 0
        want_reply = False
    if dg.n:
        sent = sender_send(&snd, dg.p, dg.n)
    if want_reply:
        # only a daemon that took the event can answer: spooled or dropped, no wait
        if sent == SEND_OK and not reply_wait(&rep, reply_deadline_ms(), &out, debug):
            tb.p = NULL
            tb.n = 0
            tb.cap = 0
            tb.oom = 0
            reply_timeout_msg(&tb, session, rep.id)
            if not tb.oom:
                sender_send(&snd, tb.p, tb.n)
            buf_free(&tb)
        reply_close(&rep)
    r = policy_after(&ctx, &out)
    if r == STEP_DECLINE:
        return decline(&snd, session, raw.p, raw.n, "hook", 1, debug,
                       out.reason if out.reason != NULL else <const char*>"policy_after", name)
    if out.len:
        write_all(1, out.buf, out.len)
    return out.exit_code
