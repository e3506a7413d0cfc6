# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""aipager._policy_c: the hook's compiled matcher, importable from Python.

The same policy files (match.pxi, floor.pxi, hookside.pxi) the glibc-only hook runs, wrapped for the CLI
(``aipager policy explain``), ``aipager.policy.match`` and the differential
tests against ``aipager.policy._match_py``.  Unlike the hook, this module
lives inside an interpreter that called setlocale(LC_CTYPE, ""); each call
switches the thread to the C locale so regcomp/fnmatch behave as in the hook.
"""

include "sys.pxi"
include "json.pxi"
include "buf.pxi"
include "paths.pxi"
include "hookctx.pxi"
include "match.pxi"
include "floor.pxi"
include "hookside.pxi"
include "pickup.pxi"
include "sendfile.pxi"
include "marker.pxi"

cdef extern from "<locale.h>" nogil:
    ctypedef struct __locale_struct:
        pass
    ctypedef __locale_struct* locale_t
    enum:
        LC_ALL_MASK
    locale_t newlocale(int mask, const char* locale, locale_t base)
    locale_t uselocale(locale_t loc)
    void freelocale(locale_t loc)

ENGINE = "c"


def decide(bytes snap, bytes event, bytes home):
    """Decide one PreToolUse event against a snapshot, as the hook would.

    Args:
        snap: the snapshot JSON (``aipager.policy.snapshot`` format).
        event: the PreToolUse event JSON.
        home: the HOME used for ``~``.

    Returns:
        ``("allow", "")``, ``("deny", reason)`` or ``("decline", why)`` when
        the compiled side hands over to the Python twin.
    """
    cdef PolSnap s
    cdef JSpan st
    cdef JSpan ev
    cdef char reason[POL_REASON_CAP]
    cdef int r
    cdef const char* sp = snap
    cdef const char* ep = event
    cdef const char* hp = home
    cdef size_t sn = len(snap)
    cdef size_t en = len(event)
    cdef locale_t cloc
    cdef locale_t old
    if b"\0" in home:
        return ("decline", "NUL in home")
    if js_parse(sp, sn, &st) < 0 or pol_snap_load(&st, &s) < 0:
        return ("decline", "snapshot not usable in C")
    if js_parse(ep, en, &ev) < 0 or ev.kind != JS_OBJECT:
        return ("decline", "event not usable in C")
    cloc = newlocale(LC_ALL_MASK, "C", <locale_t>0)
    if cloc == NULL:
        return ("decline", "no C locale")
    old = uselocale(cloc)
    with nogil:
        r = pol_decide(&s, &ev, hp, reason, POL_REASON_CAP)
    uselocale(old)
    freelocale(cloc)
    if r == POL_ALLOW:
        return ("allow", "")
    if r == POL_DENY:
        return ("deny", reason.decode("ascii"))
    return ("decline", "pol_decide declined")


def regex_compiles(bytes pattern, bint icase=False):
    """Whether glibc regcomp (C locale, the hook's flags) accepts ``pattern``."""
    cdef regex_t rx
    cdef int r
    cdef const char* p = pattern
    cdef locale_t cloc
    cdef locale_t old
    if b"\0" in pattern:
        return False
    cloc = newlocale(LC_ALL_MASK, "C", <locale_t>0)
    if cloc == NULL:
        return False
    old = uselocale(cloc)
    r = regcomp(&rx, p, REG_EXTENDED | REG_NOSUB | (REG_ICASE if icase else 0))
    if r == 0:
        regfree(&rx)
    uselocale(old)
    freelocale(cloc)
    return r == 0


def floor_literals() -> tuple:
    """(commands JSON, needles JSON) compiled into floor.pxi, for the test
    that keeps them equal to aipager.policy.floor."""
    return POL_FLOOR_COMMANDS.decode(), POL_FLOOR_NEEDLES.decode()


def sendfile_literals() -> tuple:
    """(secret names JSON, send-only globs JSON) compiled into sendfile.pxi,
    for the test that keeps them equal to aipager.policy.sendfile."""
    return SF_SECRET_NAMES.decode(), SF_SEND_GLOBS.decode()
