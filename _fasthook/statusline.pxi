# aipager-statusline stage 1 (twin: aipager/hookpy/statusline.py).
#
# TWIN OF aipager/hookpy/statusline.py:
#   write_status = write_status
#   statusline_run = _run
#
# With a valid CLAUDE_DTACH_SESSION: write the raw status JSON atomically
# (0600, temp + rename) to paths.status_file, then send the `statusline`
# datagram (values copied verbatim from the status JSON, null when absent).
# Always print the terminal line:
#     [name] <model> | <pct>% ctx | $<cost>
# name = session without "claude-" (no "[name]" without a session); model =
# model.display_name, else model.id, control characters shown as "?"; pct =
# int(used_percentage + 0.5); cost = "%.2f"; a part whose value is null,
# not a number or absurd is left out.

cdef extern from "<stdio.h>" nogil:
    # glibc >= 2.28 with _GNU_SOURCE (pyconfig.h defines it)
    int renameat2(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, unsigned int flags)
    enum:
        RENAME_EXCHANGE
        AT_FDCWD

cdef enum:
    LABEL_CAP = 4096

cdef extern from *:
    """
    #include "wire_constants.h"
    /* the statusline datagram up to its session's value */
    #define SL_DG_HEAD "{\\"type\\":\\"" WIRE_STATUSLINE "\\",\\"session\\":\\""
    /* a session's name without PATHS_SESSION_PREFIX */
    #define SL_PREFIX_LEN (sizeof(PATHS_SESSION_PREFIX) - 1)
    """
    const char SL_DG_HEAD[]
    enum:
        SL_PREFIX_LEN


cdef int write_status(const char* session_dir, const char* session, const char* raw, size_t n,
                      int debug) noexcept nogil:
    """Replace the status file with ``raw``: 0, or the errno that stopped it (as the twin)."""
    cdef char tmp[PATH_CAP]
    cdef char final[PATH_CAP]
    cdef char nm[512]
    cdef timespec ts
    cdef int fd, e
    cdef ssize_t w
    cdef size_t off = 0
    clock_gettime(CLOCK_REALTIME, &ts)
    snprintf(nm, sizeof(nm), ".claude-status-%s.json.%d.%ld.tmp", session, <int>getpid(), <long>ts.tv_nsec)
    if path_join(tmp, PATH_CAP, session_dir, nm) < 0 or paths_status_file(final, PATH_CAP, session_dir, session) < 0:
        return ENAMETOOLONG
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    if fd < 0:
        e = errno
        dbg(debug, "aipager-statusline", "cannot write", tmp)
        return e
    while off < n:
        w = write(fd, raw + off, n - off)
        if w < 0:
            if errno == EINTR:
                continue
            e = errno
            close(fd)
            unlink(tmp)
            return e
        off += <size_t>w
    close(fd)
    # Swap the new file in with RENAME_EXCHANGE, then drop the old one: as
    # atomic for readers as a replacing rename, but ext4 (a disk-backed /tmp)
    # flushes data on a rename that replaces a file (auto_da_alloc), ~1-3 ms
    # per redraw; the exchange skips that.  No target yet, or a file system
    # without the flag: a plain rename.
    if renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0:
        if unlink(tmp) == 0:
            return 0
        # What was swapped out is a folder (EISDIR), which a plain rename (the
        # twin) refuses to replace: swap it back and fail the same way.
        e = errno
        renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE)
        unlink(tmp)
        return e
    if renameat(AT_FDCWD, tmp, AT_FDCWD, final) < 0:
        e = errno
        unlink(tmp)
        return e
    return 0


cdef int add_label(Buf* line, const JSpan* top) noexcept nogil:
    """Append the sanitised model label (0), nothing (0 too), or -1 to decline."""
    cdef JSpan v
    cdef char lab[LABEL_CAP]
    cdef long k = -1
    cdef long i
    cdef unsigned char c
    if js_find_path(top, STATUS_PATH_MODEL_NAME, &v) == 1 and v.kind == JS_STRING and v.n > 2:
        k = js_decode(&v, lab, LABEL_CAP)
    elif js_find_path(top, STATUS_PATH_MODEL_ID, &v) == 1 and v.kind == JS_STRING and v.n > 2:
        k = js_decode(&v, lab, LABEL_CAP)
    else:
        return 0
    if k < 0:
        return -1
    i = 0
    while i < k:
        c = <unsigned char>lab[i]
        if c < 0x20 or c == 0x7F:
            lab[i] = c'?'
        elif c == 0xC2 and i + 1 < k and <unsigned char>lab[i + 1] >= 0x80 and <unsigned char>lab[i + 1] <= 0x9F:
            # C1 controls (U+0080-U+009F): one "?" for the 2-byte sequence
            lab[i] = c'?'
            memmove(lab + i + 1, lab + i + 2, <size_t>(k - i - 2))
            k -= 1
        i += 1
    buf_add(line, lab, <size_t>k)
    return 0


cdef bint sane_number(const JSpan* top, const char* path, double* d) noexcept nogil:
    cdef JSpan v
    if js_find_path(top, path, &v) != 1 or v.kind != JS_NUMBER:
        return False
    if js_to_double(&v, d) < 0:
        return False
    return isfinite(d[0]) and d[0] < 1e15 and d[0] > -1e15


cdef int statusline_run(int argc, char** argv, char** envp) noexcept nogil:
    cdef int debug = 0
    cdef const char* session
    cdef const char* v
    cdef bint have_session
    cdef Sender snd
    cdef char capmsg[CAP_MSG]
    cdef size_t capn = 0
    cdef Buf raw
    cdef Buf dg
    cdef Buf line
    cdef JSpan top
    cdef char session_dir[PATH_CAP]
    cdef char part[64]
    cdef double d
    cdef int r
    cdef int sr = 0
    cdef bint first = True
    cdef int k
    cdef int i
    cdef int failed

    v = getenv("AIPAGER_DEBUG")
    debug = v != NULL and strcmp(v, "1") == 0
    limit_memory()
    session = getenv("CLAUDE_DTACH_SESSION")
    have_session = session_valid(session)
    if have_session:
        sr = sender_init(&snd, debug, "aipager-statusline")
        capn = cap_msg(capmsg, session, "aipager-statusline")
    else:
        snd.ready = 0
        snd.fd = -1
        snd.debug = debug
        snd.who = "aipager-statusline"

    raw.p = NULL
    raw.n = 0
    raw.cap = 0
    raw.oom = 0
    r = read_all(0, &raw)
    if r == -2:
        if have_session:
            sender_send(&snd, capmsg, capn)
        return 1
    if r < 0 or all_ws(raw.p, raw.n):
        return 0
    if (have_session and sr < 0) or js_parse(raw.p, raw.n, &top) < 0 or top.kind != JS_OBJECT:
        return decline(&snd, session, raw.p, raw.n, "statusline", 0, debug, "odd status JSON", NULL)

    line.p = NULL
    line.n = 0
    line.cap = 0
    line.oom = 0
    if have_session:
        buf_adds(&line, "[")
        buf_adds(&line, session + SL_PREFIX_LEN if has_session_prefix(session) else session)
        buf_adds(&line, "] ")
    k = <int>line.n
    if add_label(&line, &top) < 0:
        return decline(&snd, session, raw.p, raw.n, "statusline", 0, debug, "odd model name", NULL)
    first = line.n == <size_t>k
    if sane_number(&top, STATUS_PATH_CONTEXT_PCT, &d):
        snprintf(part, sizeof(part), "%s%lld%% ctx", <const char*>"" if first else <const char*>" | ", <long long>(d + 0.5))
        buf_adds(&line, part)
        first = False
    if sane_number(&top, STATUS_PATH_COST_USD, &d):
        snprintf(part, sizeof(part), "%s$%.2f", <const char*>"" if first else <const char*>" | ", d)
        buf_adds(&line, part)
        first = False
    if first and line.n >= 2:
        line.n -= 1  # "[name] " alone: drop the trailing space
    buf_adds(&line, "\n")

    if have_session:
        dg.p = NULL
        dg.n = 0
        dg.cap = 0
        dg.oom = 0
        # {"type":"statusline","session":S, then every common.STATUS_PATHS field
        buf_adds(&dg, SL_DG_HEAD)
        buf_adds(&dg, session)
        buf_adds(&dg, "\",")
        for i in range(WIRE_STATUSLINE_FIELDS_N):
            buf_adds(&dg, WIRE_STATUSLINE_FIELDS[i].before)
            add_raw(&dg, &top, WIRE_STATUSLINE_FIELDS[i].path)
        buf_adds(&dg, "}")
        if dg.oom or line.oom:
            sender_send(&snd, capmsg, capn)
            return 1
        if dg.n > WIRE_MAX_DATAGRAM:
            return decline(&snd, session, raw.p, raw.n, "statusline", 0, debug, "datagram too large", NULL)
        if paths_session_dir(session_dir, PATH_CAP) == 0:
            failed = write_status(session_dir, session, raw.p, raw.n, debug)
            if failed:
                dg.n -= 1  # the closing brace: the errno goes last, as the twin adds it
                snprintf(part, sizeof(part), ",\"status_file_errno\":%d}", failed)
                buf_adds(&dg, part)
                if dg.oom:
                    sender_send(&snd, capmsg, capn)
                    return 1
        sender_send(&snd, dg.p, dg.n)
    elif line.oom:
        return 1
    write_all(1, line.p, line.n)
    return 0


cdef inline bint has_session_prefix(const char* s) noexcept nogil:
    return memcmp(s, PATHS_SESSION_PREFIX, SL_PREFIX_LEN) == 0 if strlen(s) >= SL_PREFIX_LEN else False
