# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""aipager-drain: the drain process as a glibc-only executable (no CPython).

Built by setup.py like aipager-hook: main.c (``-DAIPAGER_DRAIN``) calls the
``public`` entry point below; nothing here may need CPython (the link has no
-lpython and fails on any reachable Python symbol).  It is the same program as
``python -I -S aipager/daemon/drain.py FD NATIVE ...`` running the compiled
loop, at the memory cost of a small C process instead of a whole interpreter:

    aipager-drain FD [MAX_BACKLOG [PIPE SPOOL SOCKET PID]]

(drain.py's arguments without NATIVE: the loop is always the compiled one,
``drainloop.pxi``, the very source ``aipager._drain_c`` is built from).  A
MAX_BACKLOG of ``-`` means drain.py's MAX_BACKLOG (generated into
wire_constants.h).  Stdout is the pipe to the daemon: 1 MiB
(F_SETPIPE_SZ, drain.py's PIPE_SIZE), non-blocking.  SIGTERM writes a byte to
a self-pipe the loop polls (a plain C handler), so the loop stops between two
complete steps; SIGINT and SIGPIPE are ignored (the daemon decides when to
stop; a gone reader is EPIPE).  Exit 0 after a clean stop, 1 with one line on
stderr otherwise.

Salvage (the last four arguments; drain.py ``Salvage`` is the reference): a
thread waits for PID to exit (pidfd_open, else polling getppid), removes the
socket's name while it is still the file bound when the drain started, wakes
the loop and reads the pipe (PIPE: a read end of our own stdout) back while
the loop writes out what it still holds; then each datagram is written to
SPOOL as the hook would (spoolfile.pxi), named from just before the daemon's
death, in order, and stderr says how many.
"""

include "sys.pxi"
include "wire.pxi"
include "spoolfile.pxi"
include "drainloop.pxi"

from libc.string cimport strerror
from posix.stat cimport stat
from posix.unistd cimport getppid, usleep

cdef extern from *:
    """
    #include <errno.h>
    #include <fcntl.h>
    #include <signal.h>
    #include <string.h>
    #include <sys/syscall.h>
    #include <unistd.h>
    #ifndef SYS_pidfd_open
    #define SYS_pidfd_open 434
    #endif
    #ifndef F_SETPIPE_SZ
    #define F_SETPIPE_SZ 1031
    #endif

    static int aipager_drain_wake_fd = -1;

    /* SIGTERM: one byte on the self-pipe; the loop's poll sees it. */
    static void aipager_drain_on_term(int sig) {
        int saved = errno;
        ssize_t r;
        (void)sig;
        if (aipager_drain_wake_fd >= 0)
            r = write(aipager_drain_wake_fd, "x", 1);
        (void)r;
        errno = saved;
    }

    static int aipager_drain_signals(int wake_w) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        aipager_drain_wake_fd = wake_w;
        sigemptyset(&sa.sa_mask);
        sa.sa_handler = aipager_drain_on_term;
        if (sigaction(SIGTERM, &sa, NULL) < 0)
            return -1;
        sa.sa_handler = SIG_IGN;
        if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGPIPE, &sa, NULL) < 0)
            return -1;
        return 0;
    }

    static int aipager_drain_pidfd_open(int pid) {
        return (int)syscall(SYS_pidfd_open, pid, 0);
    }

    static int aipager_drain_pipe_size(int fd, int size) {
        return fcntl(fd, F_SETPIPE_SZ, size);
    }

    static int aipager_drain_load(int* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
    static void aipager_drain_store(int* p, int v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
    """
    int aipager_drain_signals(int wake_w) nogil
    int aipager_drain_pidfd_open(int pid) nogil
    int aipager_drain_pipe_size(int fd, int size) nogil
    int aipager_drain_load(int* p) nogil
    void aipager_drain_store(int* p, int v) nogil

cdef extern from "<unistd.h>" nogil:
    int pipe2(int* fds, int flags)

cdef extern from "<errno.h>" nogil:
    enum:
        ESRCH

cdef extern from "<sys/socket.h>" nogil:
    enum:
        SHUT_RD
    int shutdown(int fd, int how)
    ssize_t recv(int fd, void* buf, size_t n, int flags)

cdef extern from "<pthread.h>" nogil:
    ctypedef unsigned long pthread_t
    ctypedef struct pthread_attr_t:
        pass
    int pthread_attr_init(pthread_attr_t* attr)
    int pthread_attr_setstacksize(pthread_attr_t* attr, size_t size)
    int pthread_attr_destroy(pthread_attr_t* attr)
    int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                       void* (*start)(void*) noexcept nogil, void* arg)
    int pthread_join(pthread_t thread, void** ret)


cdef enum:
    READ_CHUNK = 1 << 20  # bytes read back from the pipe per read()
    DOOR_READS_MAX = 1 << 16  # datagrams taken after the socket stopped reading, at most


cdef struct Salvage:
    int pipe            # a read end of our stdout pipe
    int sock            # the control socket (the loop's)
    const char* spool_dir
    const char* sock_path
    int pid             # the daemon
    int wake_w          # the loop's self-pipe (a byte stops it)
    int bound           # the socket's name existed when we started
    unsigned long long dev
    unsigned long long ino
    int dead            # set once the daemon is gone (atomic)
    int loop_done       # set once the loop returned (atomic)
    unsigned long long before  # CLOCK_REALTIME ns, just before the name was cut
    char* held          # what was read back from the pipe
    size_t held_len
    size_t held_cap
    int held_failed     # out of memory while holding: some frames are lost


cdef void say(const char* a, const char* b) noexcept nogil:
    """One line ``aipager drain: <a><b>`` on stderr."""
    cdef char line[1024]
    cdef int k = snprintf(line, sizeof(line), "aipager drain: %s%s\n", a, b if b != NULL else <const char*>"")
    cdef ssize_t r
    if k > 0:
        r = write(2, line, <size_t>k if <size_t>k < sizeof(line) else sizeof(line) - 1)


cdef unsigned long long now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <unsigned long long>ts.tv_sec * 1000000000ULL + <unsigned long long>ts.tv_nsec


cdef int parse_int(const char* text, long long* out) noexcept nogil:
    """A whole non-negative decimal number (at most 18 digits); 0, or -1."""
    cdef long long value = 0
    cdef int digits = 0
    while text[digits] != 0:
        if text[digits] < 48 or text[digits] > 57 or digits >= 18:  # '0'..'9'
            return -1
        value = value * 10 + (text[digits] - 48)
        digits += 1
    if digits == 0:
        return -1
    out[0] = value
    return 0


cdef void wait_for_death(int pid) noexcept nogil:
    """Until ``pid`` exits (Salvage._wait_for_death)."""
    cdef dl_pollfd p
    cdef int pidfd = aipager_drain_pidfd_open(pid)
    if pidfd < 0:
        if errno == ESRCH:
            return
        # no pidfd (old kernel): our parent changes when the daemon dies
        while getppid() == pid:
            usleep(100000)
        return
    p.fd = pidfd
    p.events = DL_POLLIN
    while True:
        p.revents = 0
        if dl_poll(&p, 1, -1) >= 0 or errno != EINTR:
            break
    close(pidfd)


cdef void cut_socket(Salvage* s) noexcept nogil:
    """Remove the socket's name while it is the file the daemon bound (Salvage._cut_socket)."""
    cdef struct_stat st
    if not s.bound:
        return
    if stat(s.sock_path, &st) == 0 and <unsigned long long>st.st_dev == s.dev \
            and <unsigned long long>st.st_ino == s.ino:
        unlink(s.sock_path)


cdef int hold_room(Salvage* s, size_t need) noexcept nogil:
    """Room for ``need`` more bytes in ``s.held`` (doubled as it grows); 0 when memory
    ran out (``held_failed`` says so: what is held still spools)."""
    cdef char* grown
    cdef size_t want
    if s.held_cap - s.held_len >= need:
        return 1
    want = s.held_cap * 2 if s.held_cap else <size_t>READ_CHUNK * 2
    while want - s.held_len < need:
        want *= 2
    grown = <char*>realloc(s.held, want)
    if grown == NULL:
        s.held_failed = 1
        return 0
    s.held = grown
    s.held_cap = want
    return 1


cdef void hold_pipe(Salvage* s) noexcept nogil:
    """Read everything the pipe has now into ``s.held``."""
    cdef ssize_t n
    while True:
        if not hold_room(s, READ_CHUNK):
            return
        n = read(s.pipe, s.held + s.held_len, READ_CHUNK)
        if n < 0:
            if errno == EINTR:
                continue
            return  # EAGAIN: empty for now
        if n == 0:
            return
        s.held_len += <size_t>n


cdef void* salvage_watch(void* arg) noexcept nogil:
    """The watcher thread (Salvage._watch)."""
    cdef Salvage* s = <Salvage*>arg
    cdef dl_pollfd p
    cdef int done
    cdef int flags
    cdef ssize_t r
    cdef const char* byte = "x"
    wait_for_death(s.pid)
    # Named before anything the hooks spool from now on, which comes later.
    s.before = now_ns()
    cut_socket(s)
    aipager_drain_store(&s.dead, 1)
    r = write(s.wake_w, byte, 1)
    # The loop now takes the kernel queue and writes its backlog into the pipe
    # (blocking): read it back while it does, until it is done and the pipe empty.
    flags = fcntl(s.pipe, F_GETFL)
    if flags >= 0:
        fcntl(s.pipe, F_SETFL, flags | O_NONBLOCK)
    while True:
        done = aipager_drain_load(&s.loop_done)
        p.fd = s.pipe
        p.events = DL_POLLIN
        p.revents = 0
        dl_poll(&p, 1, 50)
        hold_pipe(s)
        if done:
            close_door(s)
            return NULL


cdef void close_door(Salvage* s) noexcept nogil:
    """Nothing sent from now on is accepted and then lost (Salvage._close_door)."""
    cdef char* buf
    cdef ssize_t n
    cdef int reads = 0
    if s.sock < 0 or shutdown(s.sock, SHUT_RD) < 0:
        return
    buf = <char*>malloc(WIRE_RECV_MAX)
    if buf == NULL:
        s.held_failed = 1
        return
    while reads < DOOR_READS_MAX:
        reads += 1
        n = recv(s.sock, buf, WIRE_RECV_MAX, MSG_DONTWAIT)
        if n < 0:
            if errno == EINTR:
                continue
            break  # EAGAIN: the queue is empty and stays so
        if not hold_room(s, <size_t>n + 4):
            break
        s.held[s.held_len] = <char>(n & 0xff)
        s.held[s.held_len + 1] = <char>((n >> 8) & 0xff)
        s.held[s.held_len + 2] = <char>((n >> 16) & 0xff)
        s.held[s.held_len + 3] = <char>((n >> 24) & 0xff)
        memcpy(s.held + s.held_len + 4, buf, <size_t>n)
        s.held_len += <size_t>n + 4
    free(buf)


cdef size_t spool_held(Salvage* s) noexcept nogil:
    """Spool every complete frame held, named ``before - count``, ``+ 1``, ...; how many
    were written (spool_all)."""
    cdef size_t pos = 0
    cdef size_t count = 0
    cdef size_t i = 0
    cdef size_t written = 0
    cdef size_t size
    cdef const unsigned char* at
    cdef unsigned long long first
    cdef int err
    # count first: the names end just before the daemon's death
    while s.held_len - pos >= 4:
        at = <const unsigned char*>s.held + pos
        size = <size_t>at[0] | (<size_t>at[1] << 8) | (<size_t>at[2] << 16) | (<size_t>at[3] << 24)
        if s.held_len - pos - 4 < size:
            break
        pos += 4 + size
        count += 1
    first = s.before - count
    pos = 0
    while i < count:
        at = <const unsigned char*>s.held + pos
        size = <size_t>at[0] | (<size_t>at[1] << 8) | (<size_t>at[2] << 16) | (<size_t>at[3] << 24)
        if spoolfile_write(s.spool_dir, s.held + pos + 4, size, first + i, NULL, 0, &err) == SPOOL_OK:
            written += 1
        else:
            say("cannot spool a datagram: ", strerror(err))
        pos += 4 + size
        i += 1
    return written


cdef int drain_main(int argc, char** argv) noexcept nogil:
    cdef long long fd, max_backlog, pipe_fd, pid
    cdef int wake[2]
    cdef int flags, rc
    cdef int salvaging = 0
    cdef Salvage s
    cdef struct_stat st
    cdef pthread_t watcher
    cdef pthread_attr_t attr
    cdef char line[160]
    max_backlog = DRAIN_MAX_BACKLOG
    if argc < 2 or parse_int(argv[1], &fd) < 0 or fd < 0 or (argc != 2 and argc != 3 and argc != 7):
        say("usage: aipager-drain FD [MAX_BACKLOG [PIPE SPOOL SOCKET PID]]", NULL)
        return 1
    if argc > 2 and strcmp(argv[2], "-") != 0:
        if parse_int(argv[2], &max_backlog) < 0 or max_backlog < 0:
            say("MAX_BACKLOG is not a number: ", argv[2])
            return 1
    memset(&s, 0, sizeof(s))
    s.sock = -1
    if argc == 7:
        if parse_int(argv[3], &pipe_fd) < 0 or parse_int(argv[6], &pid) < 0 or pipe_fd < 0 or pid <= 0:
            say("PIPE and PID must be numbers", NULL)
            return 1
        s.pipe = <int>pipe_fd
        s.sock = <int>fd
        s.spool_dir = argv[4]
        s.sock_path = argv[5]
        s.pid = <int>pid
        salvaging = 1

    # stdout: the pipe to the daemon, 1 MiB, non-blocking (drain.py _prepare)
    flags = fcntl(1, F_GETFL)
    if flags < 0 or fcntl(1, F_SETFL, flags | O_NONBLOCK) < 0:
        say("stdout: ", strerror(errno))
        return 1
    aipager_drain_pipe_size(1, DRAIN_PIPE_SIZE)  # best effort, as drain.py
    if pipe2(wake, O_CLOEXEC) < 0:
        say("wake pipe: ", strerror(errno))
        return 1
    fcntl(wake[1], F_SETFL, O_NONBLOCK)
    if aipager_drain_signals(wake[1]) < 0:
        say("signals: ", strerror(errno))
        return 1

    if salvaging:
        s.wake_w = wake[1]
        # The name as bound now (the daemon binds before it starts us): a socket file's
        # inode is not the socket's own (fstat of FD), so it is compared with this.
        if stat(s.sock_path, &st) == 0:
            s.bound = 1
            s.dev = <unsigned long long>st.st_dev
            s.ino = <unsigned long long>st.st_ino
        pthread_attr_init(&attr)
        pthread_attr_setstacksize(&attr, 256 * 1024)
        rc = pthread_create(&watcher, &attr, salvage_watch, &s)
        pthread_attr_destroy(&attr)
        if rc != 0:
            say("cannot watch the daemon (nothing will be salvaged): ", strerror(rc))
            salvaging = 0

    rc = drain_loop(<int>fd, 1, wake[0], <size_t>max_backlog)

    if salvaging and aipager_drain_load(&s.dead):
        aipager_drain_store(&s.loop_done, 1)
        pthread_join(watcher, NULL)
        if s.held_failed:
            say("out of memory while reading the pipe back: some datagrams are lost", NULL)
        snprintf(line, sizeof(line), "the daemon died; %zu datagram(s) it never read were spooled",
                 spool_held(&s))
        say(line, NULL)
        free(s.held)
    if rc:
        say("stopped by ", strerror(rc))
        return 1
    return 0


cdef public int aipager_drain_main(int argc, char** argv, char** envp) noexcept nogil:
    return drain_main(argc, argv)
