# Non-blocking datagram send to the daemon, with the spool for a full queue
# or a daemon that is down.
#
# TWIN OF aipager/hookpy/transport.py:
#   socket_ours = socket_ours
#   sender_send = Sender.send
#
# TWIN OF aipager/proto/spoolfile.py:
#   spool_write = write
#
#   sender_init(&s, debug)       resolve the socket (paths.pxi) and spool dir
#   sender_send(&s, buf, n)      -> SEND_OK, SEND_SPOOLED or SEND_DROPPED
#
# Only a socket of our own takes a datagram: before every send the path is
# lstat'ed (socket_ours: a socket, not a symlink, st_uid == getuid()).  A
# missing, foreign or odd one is "nobody listens": the datagram is spooled,
# never handed to whoever bound the name (another user on the machine could
# have, in a shared folder).
#
# errno mapping (the one place it happens):
#   EAGAIN/EWOULDBLOCK/ENOBUFS   the daemon's queue is full (Linux holds
#                                net.unix.max_dgram_qlen, ~10): write the
#                                datagram to the spool so nothing is lost
#   ENOENT/ECONNREFUSED/EPIPE    nobody listens (the daemon is down; EPIPE: its drain
#                                stopped reading the socket as it salvaged): spool
#                                too, the daemon replays it when it starts
#   anything else (EMSGSIZE..)   drop (debug line)
# The spool (paths.spool_dir) is used only if it exists, is a directory owned
# by us and not a symlink (the daemon creates it 0700 and keeps it across
# restarts; without it every failed send is dropped).  One file per
# datagram, "<20-digit CLOCK_REALTIME ns>-<pid>.json", written 0600 under a
# dot-temp name and then linked into place without replacing anything.

cdef enum:
    SEND_OK = 0
    SEND_SPOOLED = 1
    SEND_DROPPED = -1

ctypedef struct Sender:
    int fd
    int ready
    int debug
    # "aipager-hook" / "aipager-statusline", for diagnostics
    const char* who
    int sndbuf
    sockaddr_un addr
    socklen_t alen
    char spool[PATH_CAP]


cdef int sender_init(Sender* s, int debug, const char* who) noexcept nogil:
    """Resolve paths; 0, or -1 when a path does not fit."""
    cdef char sock[PATH_CAP]
    cdef char ctl[PATH_CAP]
    cdef size_t k
    s.fd = -1
    s.ready = 0
    s.debug = debug
    s.who = who
    s.sndbuf = 0
    if paths_socket(sock, PATH_CAP) < 0:
        return -1
    if path_dirname(ctl, PATH_CAP, sock) < 0 or path_join(s.spool, PATH_CAP, ctl, PATHS_SPOOL_NAME) < 0:
        return -1
    k = strlen(sock)
    s.addr.sun_family = AF_UNIX
    if k >= sizeof(s.addr.sun_path):
        # too long for sockaddr_un: every send is dropped (the twin's
        # sendto fails the same way)
        s.alen = 0
        return 0
    memcpy(s.addr.sun_path, sock, k + 1)
    s.alen = <socklen_t>(2 + k + 1)
    s.ready = 1
    return 0


cdef int spool_write(Sender* s, const char* data, size_t n) noexcept nogil:
    """spoolfile_write (spoolfile.pxi), named now; 0 or -1."""
    cdef timespec ts
    cdef unsigned long long ns
    cdef char name[96]
    cdef int rc, err
    clock_gettime(CLOCK_REALTIME, &ts)
    ns = <unsigned long long>ts.tv_sec * 1000000000ULL + <unsigned long long>ts.tv_nsec
    rc = spoolfile_write(s.spool, data, n, ns, name, sizeof(name), &err)
    if rc == SPOOL_OK:
        dbg(s.debug, s.who, "spooled", name)
        return 0
    if rc == SPOOL_NO_DIR:
        dbg(s.debug, s.who, "no spool dir, dropped:", s.spool)
    elif rc == SPOOL_NOT_OURS:
        dbg(s.debug, s.who, "spool dir not ours, dropped:", s.spool)
    return -1


cdef bint socket_ours(const char* path) noexcept nogil:
    """transport.socket_ours: path is a socket (not a symlink) owned by our uid."""
    cdef struct_stat st
    return lstat(path, &st) == 0 and S_ISSOCK(st.st_mode) and st.st_uid == getuid()


cdef int sender_send(Sender* s, const char* buf, size_t n) noexcept nogil:
    cdef ssize_t r
    cdef int want
    cdef socklen_t ol = sizeof(int)
    if not s.ready:
        dbg(s.debug, s.who, "socket path unusable, dropped", NULL)
        return SEND_DROPPED
    if not socket_ours(s.addr.sun_path):
        dbg(s.debug, s.who, "no socket of ours, spooling:", s.addr.sun_path)
        return SEND_SPOOLED if spool_write(s, buf, n) == 0 else SEND_DROPPED
    if s.fd < 0:
        s.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)
        if s.fd < 0:
            return SEND_DROPPED
    if n > 65536:
        # a datagram is capped by the sender's SO_SNDBUF: raise it as needed
        if s.sndbuf == 0 and getsockopt(s.fd, SOL_SOCKET, SO_SNDBUF, &s.sndbuf, &ol) < 0:
            s.sndbuf = 0
        if <size_t>s.sndbuf < n + 4096:
            want = <int>(n + 4096)
            setsockopt(s.fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(int))
            s.sndbuf = want * 2
    while True:
        r = sendto(s.fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL, <const sockaddr*>&s.addr, s.alen)
        if r >= 0:
            dbg(s.debug, s.who, "sent to", s.addr.sun_path)
            return SEND_OK
        if errno != EINTR:
            break
    # EWOULDBLOCK is EAGAIN on Linux
    if errno == EAGAIN or errno == ENOBUFS:
        return SEND_SPOOLED if spool_write(s, buf, n) == 0 else SEND_DROPPED
    if errno == ENOENT or errno == ECONNREFUSED or errno == EPIPE:
        dbg(s.debug, s.who, "daemon not reachable, spooling:", s.addr.sun_path)
        return SEND_SPOOLED if spool_write(s, buf, n) == 0 else SEND_DROPPED
    dbg(s.debug, s.who, "send failed, dropped:", s.addr.sun_path)
    return SEND_DROPPED


cdef int sender_cb(void* state, const char* buf, size_t n) noexcept nogil:
    """HookCtx.send for policy steps."""
    return 0 if sender_send(<Sender*>state, buf, n) >= 0 else -1
