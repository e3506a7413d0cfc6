# The 1 GiB memory cap, its pre-built datagram, and report_error.
#
# TWIN OF aipager/hookpy/common.py:
#   limit_memory = limit_memory
#   cap_msg = cap_message
#
# setrlimit(RLIMIT_AS) lowers the soft limit to 1 GiB (never raises it; the
# Python twin inherits it on a decline).  $AIPAGER_MEMORY_CAP (bytes)
# overrides the cap for tests and diagnosis.  The hook_memory_cap_hit
# datagram is formatted on the stack before stdin is read, so it can still be
# sent when an allocation fails: exit 2 for PreToolUse (Claude Code reads it
# as a refusal), 1 otherwise.

cdef extern from "<string.h>" nogil:
    void* memmem(const void* hay, size_t hn, const void* needle, size_t nn)

cdef enum:
    CAP_MSG = 512

cdef extern from *:
    """
    #include "wire_constants.h"
    /* the hook_memory_cap_hit datagram (session and hook are %s) */
    #define CAP_MSG_FMT "{\\"type\\":\\"" WIRE_HOOK_MEMORY_CAP_HIT "\\",\\"session\\":\\"%s\\",\\"hook\\":\\"%s\\"}"
    /* the report_error datagram (hook, kind, place, session are %s) */
    #define REPORT_FMT "{\\"type\\":\\"" WIRE_REPORT_ERROR "\\",\\"where\\":\\"hook\\",\\"hook\\":\\"%s\\",\\"kind\\":\\"%s\\",\\"place\\":\\"%s\\",\\"session\\":\\"%s\\"}"
    """
    const char CAP_MSG_FMT[]
    const char REPORT_FMT[]


cdef void limit_memory() noexcept nogil:
    cdef rlimit rl
    cdef unsigned long long cap = COMMON_MEMORY_CAP
    cdef const char* v = env_nonempty("AIPAGER_MEMORY_CAP")
    cdef unsigned long long x = 0
    if v != NULL:
        while v[0] >= c'0' and v[0] <= c'9':
            x = x * 10 + <unsigned long long>(v[0] - c'0')
            v += 1
        if v[0] == 0 and x > 0:
            cap = x
    if getrlimit(RLIMIT_AS, &rl) != 0:
        return
    if rl.rlim_cur > cap:
        rl.rlim_cur = cap
        setrlimit(RLIMIT_AS, &rl)


cdef size_t cap_msg(char* dst, const char* session, const char* hook) noexcept nogil:
    """{"type":"hook_memory_cap_hit","session":S,"hook":H} (session is validated)."""
    cdef int k = snprintf(dst, CAP_MSG, CAP_MSG_FMT, session, hook)
    return <size_t>k if k > 0 and k < CAP_MSG else 0


cdef int cap_hit(Sender* snd, const char* msg, size_t n, const char* partial, size_t pn) noexcept nogil:
    """Send the pre-built datagram; the exit code (2 when it may be a PreToolUse)."""
    cdef const char* env_ev = getenv("HOOK_EVENT")
    if n:
        sender_send(snd, msg, n)
    if (env_ev != NULL and strcmp(env_ev, WIRE_EVENT_PRE_TOOL_USE) == 0) or (partial != NULL and memmem(
            partial, pn, WIRE_PRE_TOOL_USE_QUOTED, strlen(WIRE_PRE_TOOL_USE_QUOTED)) != NULL):
        return 2
    return 1


cdef void report_error(Sender* snd, const char* session, const char* hook, const char* kind,
                       const char* place) noexcept nogil:
    """report_error: the error kind and the place in aipager's code, never event content."""
    cdef char msg[512]
    cdef int k = snprintf(msg, sizeof(msg), REPORT_FMT, hook, kind, place, session)
    if k > 0 and k < <int>sizeof(msg):
        sender_send(snd, msg, <size_t>k)
