# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled aipager-hook and aipager-statusline (stage 1).

Built into glibc-only executables by setup.py: main.c calls the two `public`
entry points below; nothing here may need CPython (module init never runs,
the link has no -lpython and fails on any reachable Python symbol).  Every
function is `noexcept nogil` with C types only.  Anything unusual is
DECLINED to the pure-Python twin (aipager/hookpy, stage2.pxi), which is the
behavioural reference.
"""

include "sys.pxi"
include "wire.pxi"
include "json.pxi"
include "buf.pxi"
include "paths.pxi"
include "hookctx.pxi"
include "spoolfile.pxi"
include "send.pxi"
include "stage2.pxi"
include "match.pxi"
include "floor.pxi"
include "hookside.pxi"
include "pickup.pxi"
include "sendfile.pxi"
include "marker.pxi"
include "memcap.pxi"
include "axcode.pxi"
include "reply.pxi"
include "forward.pxi"
include "statusline.pxi"


cdef public int aipager_hook_main(int argc, char** argv, char** envp) noexcept nogil:
    return hook_run(argc, argv, envp)


cdef public int aipager_statusline_main(int argc, char** argv, char** envp) noexcept nogil:
    return statusline_run(argc, argv, envp)
