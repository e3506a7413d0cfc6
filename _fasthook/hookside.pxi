# Policy steps of the compiled hook: the C twin of aipager/policy/hookside.py.
#
# TWIN OF aipager/policy/hookside.py:
#   policy_before = before_forward
#   policy_after = after_forward
#   pol_prompt_submitted = prompt_submitted
#   pol_deny_out = deny_output
#   policy_unusable = unusable_pre_tool_use
#   policy_fail_exit = fail_exit
#
# TWIN OF aipager/policy/snapshot.py:
#   pol_record_halt = record_halt
#
# The decision itself is match.pxi, the floor floor.pxi; the steps of their own
# files are SendUserFile (sendfile.pxi), the prompt's notes (pickup.pxi) and
# PreModelSwitch's marker (marker.pxi).  A published floor file beyond the
# built-in commands or with non-ASCII strings is declined (floor.pxi).
#
# SEAM.  For every event of a session aipager started, hook.pyx runs
#
#     r = policy_before(&ctx, &out)   # may ctx.send() own datagrams first
#     forward the event               # never for PreModelSwitch
#     r = policy_after(&ctx, &out)    # e.g. the PreToolUse decision
#     write(1, out.buf, out.len); exit(out.exit_code)
#
# Inputs (HookCtx, hookctx.pxi): raw/raw_len, top (json.pxi span), event,
# session, session_dir, control_dir, envp, debug, send(send_state, buf, n).
# Output (HookOut): buf/len (stdout), exit_code, reason (for declines).
# A payload no step can use that may be a PreToolUse (forward.pxi unusable:
# $HOOK_EVENT or "hook_event_name": "PreToolUse" in the raw bytes) goes to
# policy_unusable(&ctx, &out) instead, with ctx.top unusable (kind JS_NONE).
# Return STEP_OK, STEP_PRINT (out filled) or STEP_DECLINE.  A decline from
# policy_before runs the whole hook in Python; from policy_after only
# after_forward (the event was already forwarded).  Steps have no side
# effects before they decline.

# --- output ------------------------------------------------------------------

cdef long pol_json_str(const char* s, char* dst, size_t cap) noexcept nogil:
    """A quoted JSON string as json.dumps (ensure_ascii) writes it; length or -1."""
    cdef size_t o = 0
    cdef unsigned char c
    cdef int k
    if cap < 3:
        return -1
    dst[o] = c'"'
    o += 1
    while s[0]:
        c = <unsigned char>s[0]
        if o + 8 >= cap:
            return -1
        if c == c'"' or c == c'\\':
            dst[o] = c'\\'
            dst[o + 1] = <char>c
            o += 2
        elif c == c'\n':
            memcpy(dst + o, "\\n", 2)
            o += 2
        elif c == c'\r':
            memcpy(dst + o, "\\r", 2)
            o += 2
        elif c == c'\t':
            memcpy(dst + o, "\\t", 2)
            o += 2
        elif c == 8:
            memcpy(dst + o, "\\b", 2)
            o += 2
        elif c == 12:
            memcpy(dst + o, "\\f", 2)
            o += 2
        elif c < 0x20 or c >= 0x7f:
            k = snprintf(dst + o, cap - o, "\\u%04x", <unsigned int>c)
            if k != 6:
                return -1
            o += 6
        else:
            dst[o] = <char>c
            o += 1
        s += 1
    dst[o] = c'"'
    o += 1
    dst[o] = 0
    return <long>o


cdef int pol_snapshot_path(const HookCtx* ctx, char* dst) noexcept nogil:
    """paths.policy_file."""
    cdef int k = snprintf(dst, PATH_CAP, "%s/claude-policy-%s.json", ctx.session_dir, ctx.session)
    return 0 if 0 < k < PATH_CAP else -1


cdef long pol_read_own(const char* path, char* buf, size_t cap) noexcept nogil:
    """_fsio.read_own into buf (NUL-terminated): length, -1 absent, -2 unusable."""
    cdef int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
    cdef struct_stat st
    cdef size_t n = 0
    cdef ssize_t r
    if fd < 0:
        return -1 if errno == ENOENT else -2
    if fstat(fd, &st) != 0 or not S_ISREG(st.st_mode) or st.st_uid != geteuid() or <size_t>st.st_size >= cap:
        close(fd)
        return -2
    while n < cap - 1:
        r = read(fd, buf + n, cap - 1 - n)
        if r < 0:
            if errno == EINTR:
                continue
            close(fd)
            return -2
        if r == 0:
            break
        n += <size_t>r
    close(fd)
    if n >= cap - 1:
        return -2
    buf[n] = 0
    return <long>n


cdef void pol_record_halt(const char* path, const char* snap, size_t n, const char* reason) noexcept nogil:
    """snapshot.record_halt for a snapshot that starts with '{' and has no "halted"."""
    cdef char tmp[PATH_CAP]
    cdef char esc[POL_REASON_CAP * 6 + 3]
    cdef long elen = pol_json_str(reason, esc, sizeof(esc))
    cdef int fd
    cdef int k
    while n > 0 and js_ws(<unsigned char>snap[n - 1]):
        n -= 1
    if elen < 0 or n < 2 or snap[n - 1] != c'}':
        return
    n -= 1
    while n > 0 and js_ws(<unsigned char>snap[n - 1]):
        n -= 1
    k = snprintf(tmp, PATH_CAP, "%s.tmp%d-c", path, <int>getpid())
    if k < 0 or k >= PATH_CAP:
        return
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    if fd < 0:
        return
    write_all(fd, snap, n)
    if snap[n - 1] != c'{':
        write_all(fd, ",", 1)
    write_all(fd, "\"halted\":", 9)
    write_all(fd, esc, <size_t>elen)
    write_all(fd, "}", 1)
    close(fd)
    if rename(tmp, path) != 0:
        unlink(tmp)


cdef int pol_deny_out(HookOut* out, const char* reason) noexcept nogil:
    """hookside.deny_output(SAFETY_PREFIX + reason) into out; 0 or -1."""
    cdef char full[POL_REASON_CAP + 64]
    cdef char esc[HOOK_OUT_CAP]
    cdef long elen
    cdef int k
    snprintf(full, sizeof(full), "%s%s", POL_SAFETY_PREFIX, reason)
    elen = pol_json_str(full, esc, sizeof(esc))
    if elen < 0:
        return -1
    k = snprintf(out.buf, HOOK_OUT_CAP,
                 "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
                 "\"permissionDecision\":\"deny\",\"permissionDecisionReason\":%s}}", esc)
    if k < 0 or k >= HOOK_OUT_CAP:
        return -1
    out.len = <size_t>k
    out.exit_code = 0
    return 0


cdef void pol_send_blocked(const HookCtx* ctx, const char* tool, const char* reason) noexcept nogil:
    """The safety_blocked datagram, keys in hookside's order."""
    cdef char esc_session[1024]
    cdef char esc_tool[POL_TOOL_CAP * 6 + 3]
    cdef char esc_reason[POL_REASON_CAP * 6 + 3]
    cdef char* msg
    cdef size_t cap
    cdef int k
    if (pol_json_str(ctx.session, esc_session, sizeof(esc_session)) < 0
            or pol_json_str(tool, esc_tool, sizeof(esc_tool)) < 0
            or pol_json_str(reason, esc_reason, sizeof(esc_reason)) < 0):
        return
    cap = strlen(esc_session) + strlen(esc_tool) + strlen(esc_reason) + strlen(WIRE_SAFETY_BLOCKED) + 128
    msg = <char*>malloc(cap)
    if msg == NULL:
        return
    k = snprintf(msg, cap, "{\"hook_event_name\":\"%s\",\"session\":%s,\"tool\":%s,\"reason\":%s}",
                 WIRE_SAFETY_BLOCKED, esc_session, esc_tool, esc_reason)
    if 0 < k < <int>cap:
        ctx.send(ctx.send_state, msg, <size_t>k)
    free(msg)


# --- the steps ---------------------------------------------------------------

cdef int pol_notes_state(const HookCtx* ctx) noexcept nogil:
    """notes.outstanding: 1 some *.json in the session's notes folder, 0 none
    (or no folder, or a file in its place), -1 the folder cannot be read."""
    cdef char path[PATH_CAP]
    cdef DIR* d
    cdef dirent* e
    cdef size_t k
    cdef int found = 0
    cdef int n = snprintf(path, PATH_CAP, "%s/claude-notes-%s", ctx.session_dir, ctx.session)
    if n < 0 or n >= PATH_CAP:
        return -1
    d = opendir(path)
    if d == NULL:
        # not a folder (a file another aipager version left): no notes, as
        # listdir's NotADirectoryError is to Python
        return 0 if errno == ENOENT or errno == ENOTDIR else -1
    while True:
        e = readdir(d)
        if e == NULL:
            break
        k = strlen(e.d_name)
        if k >= 5 and strcmp(e.d_name + k - 5, ".json") == 0:
            found = 1
            break
    closedir(d)
    return found


cdef bint pol_notes_outstanding(const HookCtx* ctx) noexcept nogil:
    """notes.outstanding (an unreadable folder holds none, as in Python)."""
    return pol_notes_state(ctx) == 1


cdef void pol_clear_mark(const HookCtx* ctx) noexcept nogil:
    """snapshot.clear_mark (paths.task_mark)."""
    cdef char path[PATH_CAP]
    if pol_mark_path(ctx, path) == 0:
        unlink(path)


cdef long pol_load(const char* path, char* snap, JSpan* top, PolSnap* s) noexcept nogil:
    """Read the snapshot into snap[FSIO_MAX_READ + 1] and load it: its
    length when usable here, -1 absent, -2 not our own regular file (Python
    reads both the same way), -3 not usable here (decline)."""
    cdef long n = pol_read_own(path, snap, FSIO_MAX_READ + 1)
    if n < 0:
        return n
    if snap[0] == c'{' and js_parse(snap, <size_t>n, top) == 0 and pol_snap_load(top, s) == 0:
        return n
    return -3


cdef int pol_mark_path(const HookCtx* ctx, char* dst) noexcept nogil:
    """paths.task_mark."""
    cdef int k = snprintf(dst, PATH_CAP, "%s/claude-policy-%s.open", ctx.session_dir, ctx.session)
    return 0 if 0 < k < PATH_CAP else -1


cdef int pol_write_atomic(const char* path, const char* data, size_t n) noexcept nogil:
    """_fsio.write_atomic (mode 0600): 0, or -1 with nothing left behind."""
    cdef char tmp[PATH_CAP]
    cdef timespec ts
    cdef ssize_t w
    cdef int fd
    cdef int ok = 1
    clock_gettime(CLOCK_REALTIME, &ts)
    fd = snprintf(tmp, PATH_CAP, "%s.tmp%d-c%09ld", path, <int>getpid(), <long>ts.tv_nsec)
    if fd < 0 or fd >= PATH_CAP:
        return -1
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    if fd < 0:
        return -1
    while n > 0 and ok:
        w = write(fd, data, n)
        if w < 0:
            ok = errno == EINTR
            continue
        data += w
        n -= <size_t>w
    ok = ok and fchmod(fd, 0o600) == 0
    close(fd)
    if not ok or rename(tmp, path) != 0:
        unlink(tmp)
        return -1
    return 0


cdef int pol_prompt_kind(const JSpan* top) noexcept nogil:
    """1 a <task-notification> prompt (notes.TASK_NOTIFICATION after leading
    whitespace), 0 another prompt, -1 decline: no string prompt, its first
    character after ASCII whitespace is not ASCII (it may be a space to
    Python's lstrip), or it holds hookside.ENCODED_PREFIX."""
    cdef JSpan v
    cdef char* buf
    cdef long k
    cdef long i = 0
    cdef int r = -1
    if js_find_key(top, "prompt", 6, &v) != 1 or v.kind != JS_STRING:
        return -1
    buf = <char*>malloc(v.n + 1)
    if buf == NULL:
        return -1
    k = js_decode(&v, buf, v.n + 1)
    if k >= 0:
        while i < k and <unsigned char>buf[i] < 0x80 and pk_space(<unsigned char>buf[i]):
            i += 1
        if i == k or <unsigned char>buf[i] < 0x80:
            r = 1 if k - i >= 19 and memcmp(buf + i, "<task-notification>", 19) == 0 else 0
        # a prompt that holds an aipager message's first line anywhere (a paste's tags
        # may wrap it): hookside._unmatched decides whether it is one (Python twin)
        if r == 0 and memmem(buf, <size_t>k, POL_ENCODED_PREFIX, strlen(POL_ENCODED_PREFIX)) != NULL:
            r = -1
    free(buf)
    return r


cdef int pol_prompt_submitted(const HookCtx* ctx, HookOut* out) noexcept nogil:
    """hookside.prompt_submitted: a <task-notification> (the same task goes
    on: the mark only); a prompt while no note is outstanding (typed at the
    terminal: the terminal snapshot and the mark, no queue_pickup, no extra
    context); with notes outstanding, pk_prompt_with_notes (pickup.pxi).
    Declines when anything is unusual.  A failed write drops the snapshot
    (hookside.before_forward: the floor applies) and the event goes on."""
    cdef char snap_path[PATH_CAP]
    cdef char mark_path[PATH_CAP]
    cdef char doc[512]
    cdef char stamp[64]
    cdef timespec ts
    cdef struct_stat st
    cdef JSpan top
    cdef PolSnap s
    cdef char* snap
    cdef long n
    cdef int k
    cdef int kind = pol_prompt_kind(&ctx.top)
    out.reason = "policy: unusual prompt"
    if kind < 0 or pol_snapshot_path(ctx, snap_path) < 0 or pol_mark_path(ctx, mark_path) < 0:
        return STEP_DECLINE
    if kind == 0:
        out.reason = "policy: the notes folder cannot be read"
        k = pol_notes_state(ctx)
        if k < 0:
            return STEP_DECLINE
        if k == 1:
            # a chat message's note is outstanding: pickup.pxi
            return pk_prompt_with_notes(ctx, out, snap_path, mark_path)
        if lstat(mark_path, &st) == 0:
            # an open task: the terminal prompt joins it (hookside.joined);
            # only a terminal task (or none readable) gives the terminal rules
            out.reason = "policy: the prompt joins an open task"
            snap = <char*>malloc(FSIO_MAX_READ + 1)
            if snap == NULL:
                return STEP_DECLINE
            n = pol_load(snap_path, snap, &top, &s)
            free(snap)
            if n == -3 or (n >= 0 and not s.terminal):
                return STEP_DECLINE
    clock_gettime(CLOCK_REALTIME, &ts)
    snprintf(stamp, sizeof(stamp), "%ld.%06ld", <long>ts.tv_sec, <long>(ts.tv_nsec // 1000))
    if kind == 0:
        # snapshot.make("terminal", False, rules.empty()), keys in its order
        k = snprintf(doc, sizeof(doc),
                     "{\"v\":1,\"origin\":\"terminal\",\"exempt\":false,\"allowed_tools\":null,"
                     "\"denied_tools\":[],\"no_access\":[],\"no_write\":[],\"commands\":[],"
                     "\"commands_i\":[],\"commands_needles\":[],\"commands_i_needles\":[],"
                     "\"authors\":[],\"written_at\":%s}", stamp)
        if k < 0 or <size_t>k >= sizeof(doc) or pol_write_atomic(snap_path, doc, <size_t>k) < 0:
            unlink(snap_path)
            return STEP_OK
    k = snprintf(doc, sizeof(doc), "%s\n", stamp)
    if pol_write_atomic(mark_path, doc, <size_t>k) < 0:
        unlink(snap_path)
    return STEP_OK


cdef int policy_before(HookCtx* ctx, HookOut* out) noexcept nogil:
    """hookside.before_forward."""
    cdef JSpan v
    if strcmp(ctx.event, WIRE_EVENT_USER_PROMPT_SUBMIT) == 0:
        return pol_prompt_submitted(ctx, out)
    if strcmp(ctx.event, WIRE_EVENT_PRE_MODEL_SWITCH) == 0:
        return mk_model_switch(ctx, out)
    if strcmp(ctx.event, WIRE_EVENT_STOP) == 0 or strcmp(ctx.event, WIRE_EVENT_STOP_FAILURE) == 0:
        if not pol_notes_outstanding(ctx):
            pol_clear_mark(ctx)
        return STEP_OK
    if strcmp(ctx.event, WIRE_EVENT_SESSION_START) == 0:
        if js_find_key(&ctx.top, "source", 6, &v) == 1 and (
                js_string_eq(&v, "startup", 7) or js_string_eq(&v, "clear", 5)):
            pol_clear_mark(ctx)
    return STEP_OK



cdef int policy_after(HookCtx* ctx, HookOut* out) noexcept nogil:
    """hookside.after_forward: the PreToolUse decision."""
    cdef JSpan v
    cdef JSpan top
    cdef PolSnap s
    cdef char tool_name[POL_TOOL_CAP]
    cdef char tool[POL_TOOL_CAP]
    cdef char path[PATH_CAP]
    cdef char reason[POL_REASON_CAP]
    cdef char* snap
    cdef Buf fb
    cdef long n
    cdef int r
    cdef const char* home
    if strcmp(ctx.event, WIRE_EVENT_PRE_TOOL_USE) != 0:
        return STEP_OK
    out.reason = "policy: unusual input"
    if js_find_key(&ctx.top, "tool_name", 9, &v) != 1 or v.kind != JS_STRING:
        return STEP_DECLINE
    if js_decode_cstr(&v, tool_name, POL_TOOL_CAP) < 0 or not pol_ascii(tool_name):
        return STEP_DECLINE
    pol_lower(tool_name, tool)
    home = getenv("HOME")
    if home == NULL or home[0] == 0 or pol_snapshot_path(ctx, path) < 0:
        return STEP_DECLINE
    snap = <char*>malloc(FSIO_MAX_READ + 1)
    if snap == NULL:
        return STEP_DECLINE
    n = pol_load(path, snap, &top, &s)
    if n == -1:
        # no task recorded: the floor, built here (hookside.current_rules)
        free(snap)
        fb.p = NULL
        fb.n = 0
        fb.cap = 0
        fb.oom = 0
        snap = NULL
        if pol_floor_doc(ctx, home, &fb) == 0 and js_parse(fb.p, fb.n, &top) == 0 and pol_snap_load(&top, &s) == 0:
            snap = fb.p
            n = <long>fb.n
        else:
            buf_free(&fb)
            n = -3
    r = POL_DECLINE
    if n >= 0:
        # a "halted" key we did not act on (null, empty, inside a label)
        # would make the splice ambiguous: let Python rewrite the file
        if s.halted or memmem(snap, <size_t>n, "\"halted\"", 8) == NULL:
            r = pol_decide(&s, &ctx.top, home, reason, POL_REASON_CAP)
    if r == POL_DECLINE:
        free(snap)
        out.reason = "policy: declined to the Python twin"
        return STEP_DECLINE
    if r == POL_ALLOW:
        # SendUserFile: the file checks, for every task (sendfile.pxi)
        r = sf_send_files(ctx, &s, home, out) if strcmp(tool, "senduserfile") == 0 else STEP_OK
        free(snap)
        return r
    if pol_deny_out(out, reason) < 0:
        free(snap)
        return STEP_DECLINE
    pol_send_blocked(ctx, tool_name, reason)
    if not s.halted:
        # without a snapshot file this writes the floor it decided by, halted
        # (snapshot.record_halt's fallback)
        pol_record_halt(path, snap, <size_t>n, reason)
    free(snap)
    return STEP_PRINT


cdef int policy_unusable(const HookCtx* ctx, HookOut* out) noexcept nogil:
    """hookside.unusable_pre_tool_use: a PreToolUse whose payload cannot be
    read (ctx.top is not usable).  Allow (STEP_OK) only for a readable,
    unhalted terminal-typed or owner-exempt task; else deny (STEP_PRINT)."""
    cdef char path[PATH_CAP]
    cdef JSpan top
    cdef PolSnap s
    cdef char* snap
    cdef long n
    out.reason = "policy: unusual snapshot"
    if pol_snapshot_path(ctx, path) < 0:
        return STEP_DECLINE
    snap = <char*>malloc(FSIO_MAX_READ + 1)
    if snap == NULL:
        return STEP_DECLINE
    n = pol_load(path, snap, &top, &s)
    free(snap)
    if n == -3:
        return STEP_DECLINE
    if n >= 0 and not s.halted and (s.terminal or s.exempt):
        return STEP_OK
    if pol_deny_out(out, POL_REASON_UNUSABLE) < 0:
        return STEP_DECLINE
    return STEP_PRINT


cdef int policy_fail_exit(const char* event) noexcept nogil:
    """Exit code when the hook cannot run its steps (event may be NULL):
    2 (Claude Code's refusal) for PreToolUse, fail closed; 0 elsewhere."""
    if event != NULL and strcmp(event, WIRE_EVENT_PRE_TOOL_USE) == 0:
        return 2
    return 0
