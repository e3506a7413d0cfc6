"""Pick the PreToolUse matcher: the compiled twin unless told otherwise.

``aipager._policy_c`` (built from ``_fasthook/policy_ext.pyx``, the same
``match.pxi`` the hook ELF runs) is used unless ``aipager.native`` says no
(``AIPAGER_NO_EXTENSIONS`` set, or the module not built); ``_match_py`` is the
reference.  The C twin may *decline* (non-ASCII subject, a rule glibc will not
compile, ...): then the Python twin decides, exactly as the hook hands over to
its Python stage.
"""

from __future__ import annotations

from aipager import native
from aipager.policy import _match_py
from aipager.proto import fsio

#: the compiled matcher, or None: the twin is exact, only slower
_c = native.load("_policy_c")
ENGINE = "python" if _c is None else "c"

DECLINED = "decline"


def decide_py(snap: dict, event: dict, home: str) -> tuple[str, str]:
    """The reference decision for one PreToolUse ``event``."""
    cwd = event.get("cwd")
    return _match_py.decide(
        snap,
        event.get("tool_name"),
        event.get("tool_input"),
        cwd if isinstance(cwd, str) else "",
        home,
    )


def decide_c(snap: dict, event: dict, home: str) -> tuple[str, str]:
    """The compiled decision, or ``(DECLINED, why)`` when C hands over."""
    if _c is None:
        msg = "the compiled matcher aipager._policy_c is not available"
        raise RuntimeError(msg)
    snap_json = fsio.dumps({k: v for k, v in snap.items() if v is not None or k != "halted"})
    return _c.decide(snap_json.encode(), fsio.dumps(event).encode(), home.encode())


def decide(snap: dict, event: dict, home: str, engine: str | None = None) -> tuple[str, str]:
    """Decide with ``engine`` (default: the loaded one), the twin on a decline."""
    if (engine or ENGINE) == "c":
        decision, reason = decide_c(snap, event, home)
        if decision != DECLINED:
            return decision, reason
    return decide_py(snap, event, home)
