# The C twin of aipager/proto/paths.py for the locations the hook touches.
#
# TWIN OF aipager/proto/paths.py:
#   path_join = _join
#   path_dirname = _dirname
#   paths_private_dir = private_dir
#   paths_socket = socket_path
#   paths_session_dir = session_dir
#   paths_status_file = status_file
#
# Same resolution, same order (tests/hook checks both against real sends):
#   private  /tmp/aipager-<uid> (paths.private_dir)
#   socket   $AIPAGER_INSTANCE_DIR/aipager.sock, $AIPAGER_SOCKET_PATH,
#            $XDG_RUNTIME_DIR/aipager.sock, private/aipager.sock (first SET
#            variable wins; nothing is probed on disk)
#   control  dirname(socket) (os.path.dirname semantics, "" -> ".")
#   spool    control/aipager-spool
#   session  $AIPAGER_INSTANCE_DIR or private
#   status   session/claude-status-<session>.json
# Every function writes a NUL-terminated path into dst[0:cap] and returns 0,
# or -1 when it does not fit (callers decline: Python has no such limit).

cdef enum:
    PATH_CAP = 4096

cdef extern from *:
    """
    #include "wire_constants.h"
    #define PATHS_PRIVATE_FMT PATHS_PRIVATE_PREFIX "%u"
    """
    # paths.private_dir: PRIVATE_PREFIX + the uid
    const char PATHS_PRIVATE_FMT[]


cdef const char* env_nonempty(const char* name) noexcept nogil:
    cdef const char* v = getenv(name)
    if v == NULL or v[0] == 0:
        return NULL
    return v


cdef int path_join(char* dst, size_t cap, const char* a, const char* b) noexcept nogil:
    """os.path.join(a, b) for a relative b: a + ("/" unless a ends with "/") + b."""
    cdef size_t la = strlen(a)
    cdef size_t lb = strlen(b)
    cdef size_t sep = 0 if (la > 0 and a[la - 1] == c'/') or la == 0 else 1
    if la + sep + lb + 1 > cap:
        return -1
    memcpy(dst, a, la)
    if sep:
        dst[la] = c'/'
    memcpy(dst + la + sep, b, lb)
    dst[la + sep + lb] = 0
    return 0


cdef int path_copy(char* dst, size_t cap, const char* a) noexcept nogil:
    cdef size_t la = strlen(a)
    if la + 1 > cap:
        return -1
    memcpy(dst, a, la + 1)
    return 0


cdef int paths_private_dir(char* dst, size_t cap) noexcept nogil:
    """paths.private_dir: /tmp/aipager-<uid>."""
    cdef int k = snprintf(dst, cap, PATHS_PRIVATE_FMT, <unsigned int>getuid())
    return 0 if k > 0 and <size_t>k < cap else -1


cdef int paths_socket(char* dst, size_t cap) noexcept nogil:
    cdef char priv[64]
    cdef const char* v = env_nonempty("AIPAGER_INSTANCE_DIR")
    if v != NULL:
        return path_join(dst, cap, v, PATHS_SOCKET_NAME)
    v = env_nonempty("AIPAGER_SOCKET_PATH")
    if v != NULL:
        return path_copy(dst, cap, v)
    v = env_nonempty("XDG_RUNTIME_DIR")
    if v != NULL:
        return path_join(dst, cap, v, PATHS_SOCKET_NAME)
    if paths_private_dir(priv, sizeof(priv)) < 0:
        return -1
    return path_join(dst, cap, priv, PATHS_SOCKET_NAME)


cdef int path_dirname(char* dst, size_t cap, const char* p) noexcept nogil:
    """os.path.dirname(p) or "." (paths.control_dir)."""
    cdef size_t n = strlen(p)
    cdef size_t i = n
    cdef size_t head
    cdef size_t k
    cdef bint all_slash = True
    while i > 0 and p[i - 1] != c'/':
        i -= 1
    head = i  # p[0:head] keeps the last slash
    for k in range(head):
        if p[k] != c'/':
            all_slash = False
            break
    if not all_slash:
        while head > 0 and p[head - 1] == c'/':
            head -= 1
    if head == 0:
        return path_copy(dst, cap, ".")
    if head + 1 > cap:
        return -1
    memcpy(dst, p, head)
    dst[head] = 0
    return 0


cdef int paths_session_dir(char* dst, size_t cap) noexcept nogil:
    cdef const char* v = env_nonempty("AIPAGER_INSTANCE_DIR")
    if v != NULL:
        return path_copy(dst, cap, v)
    return paths_private_dir(dst, cap)


cdef int paths_status_file(char* dst, size_t cap, const char* session_dir, const char* session) noexcept nogil:
    cdef char name[512]
    cdef int k = snprintf(name, sizeof(name), "claude-status-%s.json", session)
    if k < 0 or <size_t>k >= sizeof(name):
        return -1
    return path_join(dst, cap, session_dir, name)


cdef bint session_valid(const char* s) noexcept nogil:
    """CLAUDE_DTACH_SESSION: 1-128 of [A-Za-z0-9._-], not "." or ".." (aipager.hookpy.common).

    Byte by byte, so a trailing newline is refused too.  Wider than the names
    aipager.dtach gives out, on purpose: a session an older version named
    claude--rf still reports.
    """
    cdef size_t n
    cdef size_t i
    cdef char c
    if s == NULL:
        return False
    n = strlen(s)
    if n == 0 or n > 128:
        return False
    if (n == 1 and s[0] == c'.') or (n == 2 and s[0] == c'.' and s[1] == c'.'):
        return False
    for i in range(n):
        c = s[i]
        if not ((c >= c'a' and c <= c'z') or (c >= c'A' and c <= c'Z') or (c >= c'0' and c <= c'9')
                or c == c'.' or c == c'_' or c == c'-'):
            return False
    return True
