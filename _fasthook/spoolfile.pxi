# One datagram spooled to a file: the compiled side's only spool writer.
#
# TWIN OF aipager/proto/spoolfile.py:
#   spoolfile_write = write
#
# Used by the hook (send.pxi spool_write: named now) and by aipager-drain's
# salvage (drain_exe.pyx: named just before the daemon died).  Same contract
# as the Python reference:
#
# - only into a real folder (no symlink) owned by our uid;
# - the bytes go to a dot-temp file ".<name>.tmp" (0600, O_EXCL), which is
#   *linked* to "<20-digit ns>-<pid>.json" and then removed: a reader never
#   sees half a file and an existing spool file is never replaced (the next
#   nanosecond's name is tried, up to SPOOLFILE_TRIES times).
#
# Needs sys.pxi and wire.pxi included first.

cdef enum:
    SPOOL_OK = 0
    SPOOL_NO_DIR = -1      # the folder cannot be opened (missing, a symlink, ...)
    SPOOL_NOT_OURS = -2    # not a folder of ours (EPERM)
    SPOOL_FAILED = -3      # the temp file, the write or the link failed


cdef int spoolfile_write(const char* spool_dir, const char* data, size_t n, unsigned long long ns,
                         char* name, size_t name_cap, int* err) noexcept nogil:
    """Spool ``data`` as one file in ``spool_dir``, named for ``ns`` (or the next free
    nanosecond); the file name goes to ``name`` (when not NULL).  SPOOL_OK, or a
    negative SPOOL_* code with the errno saying why in ``err``."""
    cdef int dfd
    cdef int fd
    cdef struct_stat st
    cdef char tmp[96]
    cdef char final[96]
    cdef int tries
    cdef ssize_t w
    cdef size_t off = 0
    cdef int pid = <int>getpid()
    dfd = open(spool_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    err[0] = 0
    if dfd < 0:
        err[0] = errno
        return SPOOL_NO_DIR
    if fstat(dfd, &st) < 0 or not S_ISDIR(st.st_mode) or st.st_uid != geteuid():
        close(dfd)
        err[0] = EPERM
        return SPOOL_NOT_OURS
    snprintf(tmp, sizeof(tmp), ".%020llu-%d.json.tmp", ns, pid)
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    if fd < 0:
        err[0] = errno
        close(dfd)
        return SPOOL_FAILED
    while off < n:
        w = write(fd, data + off, n - off)
        if w < 0:
            if errno == EINTR:
                continue
            err[0] = errno
            close(fd)
            unlinkat(dfd, tmp, 0)
            close(dfd)
            return SPOOL_FAILED
        off += <size_t>w
    close(fd)
    err[0] = EEXIST
    for tries in range(SPOOLFILE_TRIES):
        snprintf(final, sizeof(final), "%020llu-%d.json", ns + <unsigned long long>tries, pid)
        if linkat(dfd, tmp, dfd, final, 0) == 0:
            unlinkat(dfd, tmp, 0)
            close(dfd)
            if name != NULL and name_cap:
                snprintf(name, name_cap, "%s", final)
            return SPOOL_OK
        err[0] = errno
        if err[0] != EEXIST:
            break
    unlinkat(dfd, tmp, 0)
    close(dfd)
    return SPOOL_FAILED
