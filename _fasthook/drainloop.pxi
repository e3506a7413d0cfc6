# The drain's loop: datagrams from the control socket into the daemon's pipe.
#
# One source, two builds (setup.py):
#   drain_ext.pyx  -> aipager._drain_c, the extension drain.py loads (``run``)
#   drain_exe.pyx  -> aipager-drain, the glibc-only executable (no CPython)
#
# TWIN OF aipager/daemon/drain.py:
#   drain_loop = python_loop
#
# drain_loop(fd, out, wake, max_backlog) moves datagrams from the socket ``fd``
# into the pipe ``out`` as 4-byte little-endian length + bytes.  It needs no
# CPython at all (``noexcept nogil``, C types only) and takes the kernel queue
# in ``recvmmsg`` batches (one system call for up to C_BATCH datagrams, written
# on with one ``writev``).
#
# Contract (tests/daemon/test_drain.py runs it against every contender):
#
# - Frames leave in arrival order; a datagram is never split across frames.
# - When the pipe is full the frames wait in memory; once ``max_backlog``
#   bytes wait, the socket is no longer read, so the kernel queue fills and
#   the hooks spool (nothing is dropped here).
# - A byte on ``wake`` (SIGTERM arrives that way) means stop: take what the
#   kernel still queues, write everything (blocking), return 0.
# - The daemon closing the pipe ends the loop (return 0).
# - Any other failure returns its errno.
#
# Declarations carry a ``dl_``/``DL_`` prefix (their C names are the real
# ones): this file is included next to sys.pxi in drain_exe.pyx, whose own
# declarations of the same libc names must not clash.
#
# Needs wire.pxi (WIRE_RECV_MAX) included first.

from libc.errno cimport errno, EINTR, EAGAIN, EPIPE
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memmove, memset
from libc.stdint cimport uint32_t
from posix.unistd cimport write
from posix.fcntl cimport fcntl, F_GETFL, F_SETFL, O_NONBLOCK

cdef extern from "<poll.h>" nogil:
    struct dl_pollfd "pollfd":
        int fd
        short events
        short revents
    enum:
        DL_POLLIN "POLLIN"
        DL_POLLOUT "POLLOUT"
        DL_POLLERR "POLLERR"
        DL_POLLHUP "POLLHUP"
        DL_POLLNVAL "POLLNVAL"
    int dl_poll "poll"(dl_pollfd* fds, unsigned long nfds, int timeout)

cdef extern from "<sys/uio.h>" nogil:
    struct dl_iovec "iovec":
        void* iov_base
        size_t iov_len
    ssize_t dl_writev "writev"(int fd, const dl_iovec* iov, int iovcnt)

cdef extern from "<sys/socket.h>" nogil:
    struct dl_msghdr "msghdr":
        void* msg_name
        unsigned int msg_namelen
        dl_iovec* msg_iov
        size_t msg_iovlen
        void* msg_control
        size_t msg_controllen
        int msg_flags
    struct dl_mmsghdr "mmsghdr":
        dl_msghdr msg_hdr
        unsigned int msg_len
    enum:
        DL_MSG_DONTWAIT "MSG_DONTWAIT"
    int dl_recvmmsg "recvmmsg"(int fd, dl_mmsghdr* vec, unsigned int vlen, int flags, void* timeout)

cdef enum:
    C_BATCH = 32
    SLOT = 4 + WIRE_RECV_MAX
    KEEP_BACKLOG = 4 << 20  # an empty backlog buffer larger than this is freed


cdef struct DrainBacklog:
    char* buf
    size_t head
    size_t tail
    size_t cap


cdef int dl_reserve(DrainBacklog* b, size_t more) noexcept nogil:
    """Room for ``more`` bytes at the tail; 0, or -1 when memory runs out."""
    cdef size_t used = b.tail - b.head
    cdef size_t want
    cdef char* grown
    if b.cap - b.tail >= more:
        return 0
    if b.head:  # slide the unwritten bytes to the front first
        memmove(b.buf, b.buf + b.head, used)
        b.head = 0
        b.tail = used
        if b.cap - b.tail >= more:
            return 0
    want = b.cap * 2 if b.cap else 1 << 20
    while want - used < more:
        want *= 2
    grown = <char*>realloc(b.buf, want)
    if grown == NULL:
        return -1
    b.buf = grown
    b.cap = want
    return 0


cdef int dl_append(DrainBacklog* b, const char* data, size_t n) noexcept nogil:
    if dl_reserve(b, n) < 0:
        return -1
    memcpy(b.buf + b.tail, data, n)
    b.tail += n
    return 0


cdef int dl_flush(DrainBacklog* b, int out) noexcept nogil:
    """Write what waits until the pipe is full; 0, 1 when the reader is gone, or -errno."""
    cdef ssize_t n
    while b.tail > b.head:
        n = write(out, b.buf + b.head, b.tail - b.head)
        if n < 0:
            if errno == EINTR:
                continue
            if errno == EAGAIN:
                return 0
            if errno == EPIPE:
                return 1
            return -errno
        b.head += <size_t>n
    b.head = 0
    b.tail = 0
    if b.cap > KEEP_BACKLOG:  # caught up after a long stall: give the memory back
        free(b.buf)
        b.buf = NULL
        b.cap = 0
    return 0


cdef int dl_take(int fd, int out, DrainBacklog* b, char* slots, dl_mmsghdr* msgs, dl_iovec* frames,
               size_t limit, bint until_empty) noexcept nogil:
    """One or more recvmmsg batches, framed and passed on.

    With nothing waiting in the backlog the frames go straight from the
    receive slots to the pipe (one writev); what the pipe does not take is
    copied into the backlog, behind which everything later queues in order.
    Stops when the queue is empty or ``limit`` bytes wait (a sender keeping
    the queue full would otherwise keep it reading past the backlog cap).
    Returns 0, 1 when the reader is gone, or -errno.
    """
    cdef int k, i
    cdef uint32_t size
    cdef ssize_t wrote
    cdef size_t skip, length
    cdef char* slot
    while True:
        k = dl_recvmmsg(fd, msgs, C_BATCH, DL_MSG_DONTWAIT, NULL)
        if k < 0:
            if errno == EINTR:
                continue
            if errno == EAGAIN:
                return 0
            return -errno
        for i in range(k):
            slot = slots + <size_t>i * SLOT
            size = msgs[i].msg_len
            # little-endian length prefix, whatever the host order
            slot[0] = <char>(size & 0xFF)
            slot[1] = <char>((size >> 8) & 0xFF)
            slot[2] = <char>((size >> 16) & 0xFF)
            slot[3] = <char>((size >> 24) & 0xFF)
            frames[i].iov_base = slot
            frames[i].iov_len = 4 + size
        wrote = 0
        if b.tail == b.head:
            while True:
                wrote = dl_writev(out, frames, k)
                if wrote >= 0 or errno != EINTR:
                    break
            if wrote < 0:
                if errno == EPIPE:
                    return 1
                if errno != EAGAIN:
                    return -errno
                wrote = 0
        skip = <size_t>wrote
        for i in range(k):
            length = frames[i].iov_len
            if skip >= length:
                skip -= length
                continue
            if dl_append(b, <char*>frames[i].iov_base + skip, length - skip) < 0:
                return -12  # ENOMEM
            skip = 0
        if b.tail - b.head >= limit:
            return 0
        if k < C_BATCH and not until_empty:
            return 0  # a short batch: the queue was empty (saves the EAGAIN call)


cdef int dl_set_blocking(int fd) noexcept nogil:
    cdef int flags = fcntl(fd, F_GETFL)
    if flags < 0:
        return -1
    return fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)


cdef int drain_loop(int fd, int out, int wake, size_t max_backlog) noexcept nogil:
    cdef DrainBacklog b
    cdef dl_pollfd fds[3]
    cdef char* slots = <char*>malloc(<size_t>C_BATCH * SLOT)
    cdef dl_mmsghdr msgs[C_BATCH]
    cdef dl_iovec into[C_BATCH]
    cdef dl_iovec frames[C_BATCH]
    cdef int i, rc = 0, n
    cdef ssize_t wrote
    cdef bint stopping = False
    if slots == NULL:
        return 12  # ENOMEM
    memset(&b, 0, sizeof(b))
    memset(msgs, 0, sizeof(msgs))
    for i in range(C_BATCH):
        into[i].iov_base = slots + <size_t>i * SLOT + 4
        into[i].iov_len = WIRE_RECV_MAX
        msgs[i].msg_hdr.msg_iov = &into[i]
        msgs[i].msg_hdr.msg_iovlen = 1
    while not stopping:
        # A full backlog stops reading: the kernel queue fills and the hooks spool.
        fds[0].fd = fd if b.tail - b.head < max_backlog else -1
        fds[0].events = DL_POLLIN
        fds[1].fd = wake
        fds[1].events = DL_POLLIN
        fds[2].fd = out
        fds[2].events = DL_POLLOUT if b.tail > b.head else 0
        fds[0].revents = fds[1].revents = fds[2].revents = 0
        n = dl_poll(fds, 3, -1)
        if n < 0:
            if errno == EINTR:
                continue  # the signal's byte on ``wake`` is what tells us to stop
            rc = errno
            break
        if fds[2].revents & (DL_POLLERR | DL_POLLHUP | DL_POLLNVAL):
            break  # the daemon went away
        if fds[1].revents:
            stopping = True
        if fds[0].revents & (DL_POLLERR | DL_POLLNVAL):
            rc = 9  # EBADF: the socket is gone
            break
        if b.tail > b.head:
            rc = dl_flush(&b, out)
            if rc:
                break
        if fds[0].revents & DL_POLLIN or stopping:
            rc = dl_take(fd, out, &b, slots, msgs, frames, <size_t>-1 if stopping else max_backlog,
                        stopping)
            if rc:
                break
    if rc == 0 and stopping:
        # Everything left goes out now; the daemon reads until the pipe closes.
        if dl_set_blocking(out) < 0:
            rc = errno
        else:
            while b.tail > b.head:
                wrote = write(out, b.buf + b.head, b.tail - b.head)
                if wrote < 0:
                    if errno == EINTR:
                        continue
                    if errno != EPIPE:
                        rc = errno
                    break
                b.head += <size_t>wrote
    free(b.buf)
    free(slots)
    if rc == 1:
        return 0  # the reader left: that is how the daemon says "done"
    if rc < 0:
        return -rc
    return rc
