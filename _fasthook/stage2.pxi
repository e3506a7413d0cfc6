# Stage 2: hand an event the fast path declined to the pure-Python twin.
#
# The already-read stdin goes into a memfd (O_TMPFILE file as a fallback)
# that becomes fd 0, then the process execs the environment's own Python:
#
#   <python> -S -I -c BOOT <site-dir> <hook|statusline> [--forwarded] --capped --fail-exit=N [--sock=FD]
#
# <python> is the interpreter next to the real executable (/proc/self/exe:
# a venv's bin/python), else the one that built it (AIPAGER_BUILD_PYTHON).
# <site-dir> is the first of <exe dir>/../lib/pythonX.Y/site-packages and the
# build interpreter's purelib that holds aipager/hookpy/entry.py; BOOT puts it
# on sys.path.  With none found, Python starts with site (slower, still right).
# --forwarded: policy_after declined after the event was sent; the twin runs
# after_forward only.  --capped: the memory cap is already set.  --fail-exit:
# the exit code if Python cannot run the twin at all (BOOT).  --sock=FD:
# a datagram socket already connected to the daemon (connected_socket).

cdef extern from *:
    """
    /* defined by main.c from setup.py's build-time values */
    extern const char aipager_build_python[];
    extern const char aipager_build_pyver[];
    extern const char aipager_build_purelib[];
    /* aipager.hookpy.entry.BOOT, baked in by setup.py: one source for both */
    extern const char aipager_boot[];
    #define AIPAGER_BOOT aipager_boot
    """
    const char aipager_build_python[]
    const char aipager_build_pyver[]
    const char aipager_build_purelib[]
    const char AIPAGER_BOOT[]


cdef int stdin_from_bytes(const char* raw, size_t n) noexcept nogil:
    """Make fd 0 a fresh file holding raw[0:n], positioned at 0."""
    cdef int fd = memfd_create("aipager-stdin", 0)
    cdef ssize_t w
    cdef size_t off = 0
    if fd < 0:
        fd = open("/tmp", O_TMPFILE | O_RDWR, 0o600)
        if fd < 0:
            return -1
    while off < n:
        w = write(fd, raw + off, n - off)
        if w < 0:
            if errno == EINTR:
                continue
            close(fd)
            return -1
        off += <size_t>w
    if lseek(fd, 0, SEEK_SET) != 0 or dup2(fd, 0) < 0:
        close(fd)
        return -1
    if fd != 0:
        close(fd)
    return 0


cdef int connected_socket(const Sender* snd) noexcept nogil:
    """A non-blocking datagram socket connected to the daemon, kept across exec; -1 if none.

    Why: the twin then sends with a plain write() on this descriptor and
    never loads the _socket extension (measured ~0.3-0.5 ms of its start).
    A daemon that is down refuses the connect, and a socket that is not ours
    is never connected: the twin falls back to its own socket (which checks
    again) and the spool."""
    cdef int fd
    if not snd.ready or not socket_ours(snd.addr.sun_path):
        return -1
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0)
    if fd < 0:
        return -1
    if connect(fd, <const sockaddr*>&snd.addr, snd.alen) != 0:
        close(fd)
        return -1
    return fd


cdef int stage2_exec(const Sender* snd, const char* raw, size_t n, const char* which, int forwarded,
                     int fail_exit, int debug) noexcept nogil:
    """Exec the Python twin; returns -1 only when that was impossible."""
    cdef char exe[PATH_CAP]
    cdef char dir_[PATH_CAP]
    cdef char py[PATH_CAP]
    cdef char site[PATH_CAP]
    cdef char probe[PATH_CAP]
    cdef const char* argv[13]
    cdef char sockarg[32]
    cdef char failarg[32]
    cdef int sock
    cdef ssize_t k
    cdef int a = 0
    cdef bint have_site = False
    cdef const char* sitearg = ""
    k = readlink("/proc/self/exe", exe, PATH_CAP - 1)
    if k <= 0:
        exe[0] = 0
        dir_[0] = 0
    else:
        exe[k] = 0
        path_dirname(dir_, PATH_CAP, exe)
    py[0] = 0
    if dir_[0] and path_join(py, PATH_CAP, dir_, "python") == 0 and access(py, X_OK) == 0:
        pass
    elif aipager_build_python[0] and access(aipager_build_python, X_OK) == 0:
        path_copy(py, PATH_CAP, aipager_build_python)
    else:
        dbg(debug, "aipager", "stage 2: no python found", NULL)
        return -1
    if dir_[0]:
        snprintf(site, PATH_CAP, "%s/../lib/python%s/site-packages", dir_, aipager_build_pyver)
        snprintf(probe, PATH_CAP, "%s/aipager/hookpy/entry.py", site)
        have_site = access(probe, R_OK) == 0
    if not have_site and aipager_build_purelib[0]:
        snprintf(probe, PATH_CAP, "%s/aipager/hookpy/entry.py", aipager_build_purelib)
        if access(probe, R_OK) == 0:
            path_copy(site, PATH_CAP, aipager_build_purelib)
            have_site = True
    if have_site:
        sitearg = site
    if stdin_from_bytes(raw, n) < 0:
        dbg(debug, "aipager", "stage 2: cannot pass stdin", NULL)
        return -1
    argv[a] = py
    a += 1
    if have_site:
        argv[a] = "-S"
        a += 1
    argv[a] = "-I"
    a += 1
    argv[a] = "-c"
    a += 1
    argv[a] = AIPAGER_BOOT
    a += 1
    argv[a] = sitearg
    a += 1
    argv[a] = which
    a += 1
    if forwarded:
        argv[a] = "--forwarded"
        a += 1
    # RLIMIT_AS is already in force (inherited): the twin skips `resource`
    argv[a] = "--capped"
    a += 1
    snprintf(failarg, sizeof(failarg), "--fail-exit=%d", fail_exit)
    argv[a] = failarg
    a += 1
    sock = connected_socket(snd)
    if sock >= 0:
        snprintf(sockarg, sizeof(sockarg), "--sock=%d", sock)
        argv[a] = sockarg
        a += 1
    argv[a] = NULL
    dbg(debug, "aipager", "stage 2 via", py)
    execv(py, <char**>argv)
    dbg(debug, "aipager", "stage 2: exec failed", py)
    return -1
