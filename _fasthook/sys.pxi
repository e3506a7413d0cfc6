# libc / kernel declarations the hook needs beyond Cython's bundled pxds.
#
# Everything is `nogil`; nothing here touches CPython.  _GNU_SOURCE is already
# defined by pyconfig.h (pulled in first by the generated C), which is what
# exposes memfd_create and O_TMPFILE.

from libc.errno cimport errno, EINTR, EAGAIN, ENOBUFS, EEXIST, ENOMEM, ENAMETOOLONG, EPERM, EPIPE
from libc.stdio cimport snprintf
from libc.stdlib cimport malloc, realloc, free, getenv
from libc.string cimport memcmp, memcpy, memchr, strlen, strcmp, memmove
from posix.unistd cimport (read, write, close, getpid, geteuid, getuid, execv, dup2,
                           lseek, readlink, access, unlink, link, X_OK, R_OK)
from posix.fcntl cimport open, O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_NONBLOCK
from posix.stat cimport struct_stat, fstat, lstat, S_ISDIR, S_ISREG, S_ISSOCK
from posix.time cimport clock_gettime, timespec, CLOCK_REALTIME
from posix.resource cimport rlimit, getrlimit, setrlimit, RLIMIT_AS

cdef extern from "<errno.h>" nogil:
    enum:
        ENOENT
        ENOTDIR
        ECONNREFUSED

cdef extern from "<fcntl.h>" nogil:
    enum:
        O_CLOEXEC
        O_NOFOLLOW
        O_DIRECTORY
        O_TMPFILE
    int openat(int dirfd, const char* path, int flags, ...)
    int linkat(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int flags)
    int renameat(int olddirfd, const char* oldpath, int newdirfd, const char* newpath)
    int unlinkat(int dirfd, const char* path, int flags)

cdef extern from "<unistd.h>" nogil:
    enum:
        SEEK_SET

cdef extern from "<sys/mman.h>" nogil:
    int memfd_create(const char* name, unsigned int flags)

cdef extern from "<sys/socket.h>" nogil:
    ctypedef unsigned int socklen_t
    struct sockaddr:
        pass
    enum:
        AF_UNIX
        SOCK_DGRAM
        SOCK_CLOEXEC
        SOCK_NONBLOCK
        MSG_DONTWAIT
        MSG_NOSIGNAL
        SOL_SOCKET
        SO_SNDBUF
    int socket(int domain, int type, int protocol)
    int connect(int fd, const sockaddr* addr, socklen_t alen)
    ssize_t sendto(int fd, const void* buf, size_t n, int flags, const sockaddr* addr, socklen_t alen)
    int setsockopt(int fd, int level, int name, const void* val, socklen_t vlen)
    int getsockopt(int fd, int level, int name, void* val, socklen_t* vlen)

cdef extern from "<sys/un.h>" nogil:
    struct sockaddr_un:
        unsigned short sun_family
        char sun_path[108]

cdef extern from "<math.h>" nogil:
    bint isfinite(double x)
