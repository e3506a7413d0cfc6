# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""aipager._drain_c: the native twin of ``aipager/daemon/drain.py``'s loop.

``run(fd, out, wake)`` moves datagrams from the control socket ``fd`` into the
pipe ``out`` as 4-byte little-endian length + bytes, exactly like the Python
loop, but it holds no GIL for its whole life and takes the kernel queue in
``recvmmsg`` batches (one system call for up to ``BATCH`` datagrams, written
on with one ``writev``).  Per datagram that is a fraction of the Python loop's
cost, so the drain is back in ``poll`` (and ready for the next wakeup) sooner.

Contract shared with the Python loop (tests run both):

- Frames leave in arrival order; a datagram is never split across frames.
- When the pipe is full the frames wait in memory; once ``max_backlog``
  bytes wait, the socket is no longer read, so the kernel queue fills and the
  hooks spool (nothing is dropped here).
- A byte on ``wake`` (SIGTERM arrives that way, via ``signal.set_wakeup_fd``)
  means stop: take what the kernel still queues, write everything (blocking),
  return 0.
- The daemon closing the pipe ends the loop (return 0).
- Any other failure returns its errno (the caller exits non-zero and the
  daemon falls back to its receiving thread).
"""

from libc.errno cimport errno, EINTR, EAGAIN, EPIPE
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memmove
from posix.unistd cimport write

cdef extern from "<poll.h>" nogil:
    struct pollfd:
        int fd
        short events
        short revents
    enum:
        POLLIN
        POLLOUT
        POLLERR
        POLLHUP
        POLLNVAL
    int poll(pollfd* fds, unsigned long nfds, int timeout)

cdef extern from "<sys/uio.h>" nogil:
    struct iovec:
        void* iov_base
        size_t iov_len
    ssize_t writev(int fd, const iovec* iov, int iovcnt)

cdef extern from "<sys/socket.h>" nogil:
    struct msghdr:
        void* msg_name
        unsigned int msg_namelen
        iovec* msg_iov
        size_t msg_iovlen
        void* msg_control
        size_t msg_controllen
        int msg_flags
    struct mmsghdr:
        msghdr msg_hdr
        unsigned int msg_len
    enum:
        MSG_DONTWAIT
    int recvmmsg(int fd, mmsghdr* vec, unsigned int vlen, int flags, void* timeout)

cdef extern from "<fcntl.h>" nogil:
    enum:
        F_GETFL
        F_SETFL
        O_NONBLOCK
    int fcntl(int fd, int cmd, ...)

cdef extern from "<string.h>" nogil:
    void* memset(void* s, int c, size_t n)

cdef extern from "<stdint.h>" nogil:
    ctypedef unsigned int uint32_t

#: the largest datagram taken (aipager.wire.MAX_DATAGRAM plus slack, as drain.py)
MAX_DATAGRAM = 201_024
#: datagrams per recvmmsg call; each slot is MAX_DATAGRAM bytes of address space,
#: but only the pages a datagram touches become resident
BATCH = 32

cdef enum:
    C_MAX_DATAGRAM = 201_024
    C_BATCH = 32
    SLOT = 4 + C_MAX_DATAGRAM
    KEEP_BACKLOG = 4 << 20  # an empty backlog buffer larger than this is freed


cdef struct Backlog:
    char* buf
    size_t head
    size_t tail
    size_t cap


cdef int _reserve(Backlog* b, size_t more) noexcept nogil:
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


cdef int _append(Backlog* b, const char* data, size_t n) noexcept nogil:
    if _reserve(b, n) < 0:
        return -1
    memcpy(b.buf + b.tail, data, n)
    b.tail += n
    return 0


cdef int _flush(Backlog* b, int out) noexcept nogil:
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


cdef int _take(int fd, int out, Backlog* b, char* slots, mmsghdr* msgs, iovec* frames,
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
        k = recvmmsg(fd, msgs, C_BATCH, MSG_DONTWAIT, NULL)
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
                wrote = writev(out, frames, k)
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
            if _append(b, <char*>frames[i].iov_base + skip, length - skip) < 0:
                return -12  # ENOMEM
            skip = 0
        if b.tail - b.head >= limit:
            return 0
        if k < C_BATCH and not until_empty:
            return 0  # a short batch: the queue was empty (saves the EAGAIN call)


cdef int _set_blocking(int fd) noexcept nogil:
    cdef int flags = fcntl(fd, F_GETFL)
    if flags < 0:
        return -1
    return fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)


cdef int _loop(int fd, int out, int wake, size_t max_backlog) noexcept nogil:
    cdef Backlog b
    cdef pollfd fds[3]
    cdef char* slots = <char*>malloc(<size_t>C_BATCH * SLOT)
    cdef mmsghdr msgs[C_BATCH]
    cdef iovec into[C_BATCH]
    cdef iovec frames[C_BATCH]
    cdef int i, rc = 0, n
    cdef ssize_t wrote
    cdef bint stopping = False
    if slots == NULL:
        return 12  # ENOMEM
    memset(&b, 0, sizeof(b))
    memset(msgs, 0, sizeof(msgs))
    for i in range(C_BATCH):
        into[i].iov_base = slots + <size_t>i * SLOT + 4
        into[i].iov_len = C_MAX_DATAGRAM
        msgs[i].msg_hdr.msg_iov = &into[i]
        msgs[i].msg_hdr.msg_iovlen = 1
    while not stopping:
        # A full backlog stops reading: the kernel queue fills and the hooks spool.
        fds[0].fd = fd if b.tail - b.head < max_backlog else -1
        fds[0].events = POLLIN
        fds[1].fd = wake
        fds[1].events = POLLIN
        fds[2].fd = out
        fds[2].events = POLLOUT if b.tail > b.head else 0
        fds[0].revents = fds[1].revents = fds[2].revents = 0
        n = poll(fds, 3, -1)
        if n < 0:
            if errno == EINTR:
                continue  # the signal's byte on ``wake`` is what tells us to stop
            rc = errno
            break
        if fds[2].revents & (POLLERR | POLLHUP | POLLNVAL):
            break  # the daemon went away
        if fds[1].revents:
            stopping = True
        if fds[0].revents & (POLLERR | POLLNVAL):
            rc = 9  # EBADF: the socket is gone
            break
        if b.tail > b.head:
            rc = _flush(&b, out)
            if rc:
                break
        if fds[0].revents & POLLIN or stopping:
            rc = _take(fd, out, &b, slots, msgs, frames, <size_t>-1 if stopping else max_backlog,
                        stopping)
            if rc:
                break
    if rc == 0 and stopping:
        # Everything left goes out now; the daemon reads until the pipe closes.
        if _set_blocking(out) < 0:
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


def run(int fd, int out, int wake, size_t max_backlog):
    """Move datagrams from socket ``fd`` to pipe ``out`` until a byte on ``wake`` or a closed pipe.

    Args:
        fd: the bound datagram socket (any blocking mode; reads never wait).
        out: the pipe's write end, already non-blocking.
        wake: a descriptor that becomes readable when the loop must stop.
        max_backlog: bytes held in memory before the socket is left unread.

    Returns:
        0 after a clean stop, else the errno that ended the loop.
    """
    cdef int rc
    with nogil:
        rc = _loop(fd, out, wake, max_backlog)
    return rc
