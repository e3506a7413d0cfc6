# A growable byte buffer and stderr diagnostics for the fast path.
#
# An allocation failure sets `oom` (every later add is a no-op), so callers
# check once at the end; under the 1 GiB RLIMIT_AS this is how the hook
# notices the memory cap.

ctypedef struct Buf:
    char* p
    size_t n
    size_t cap
    int oom


cdef int buf_reserve(Buf* b, size_t extra) noexcept nogil:
    cdef size_t want
    cdef char* q
    if b.oom:
        return -1
    if b.n + extra + 1 <= b.cap:
        return 0
    want = b.cap * 2 if b.cap else 4096
    while want < b.n + extra + 1:
        want *= 2
    q = <char*>realloc(b.p, want)
    if q == NULL:
        b.oom = 1
        return -1
    b.p = q
    b.cap = want
    return 0


cdef void buf_add(Buf* b, const char* s, size_t k) noexcept nogil:
    if buf_reserve(b, k) < 0:
        return
    memcpy(b.p + b.n, s, k)
    b.n += k
    b.p[b.n] = 0


cdef inline void buf_adds(Buf* b, const char* s) noexcept nogil:
    buf_add(b, s, strlen(s))


cdef void buf_free(Buf* b) noexcept nogil:
    free(b.p)
    b.p = NULL
    b.n = 0
    b.cap = 0


cdef int read_all(int fd, Buf* b) noexcept nogil:
    """Read fd to EOF into b: 0, -1 on a read error, -2 when out of memory."""
    cdef ssize_t r
    while True:
        if buf_reserve(b, 65536) < 0:
            return -2
        r = read(fd, b.p + b.n, b.cap - b.n - 1)
        if r < 0:
            if errno == EINTR:
                continue
            return -1
        if r == 0:
            b.p[b.n] = 0
            return 0
        b.n += <size_t>r


cdef void write_all(int fd, const char* s, size_t n) noexcept nogil:
    cdef ssize_t r
    while n > 0:
        r = write(fd, s, n)
        if r < 0:
            if errno == EINTR:
                continue
            return
        s += r
        n -= <size_t>r


cdef void dbg(int debug, const char* who, const char* a, const char* b) noexcept nogil:
    """AIPAGER_DEBUG=1: one line `who: a b` on stderr."""
    cdef char line[1024]
    cdef int k
    if not debug:
        return
    k = snprintf(line, sizeof(line), "%s: %s %s\n", who, a, b if b != NULL else <const char*>"")
    if k > 0:
        write_all(2, line, <size_t>k if <size_t>k < sizeof(line) else sizeof(line) - 1)
