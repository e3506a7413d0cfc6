"""The model-switch marker: lets the hook approve a ``/model`` aipager typed.

The daemon writes ``paths.modelswitch_marker`` (0600, atomic) just before it
types ``/model <name>``::

    {"v": 1, "session": "claude-x", "model": "sonnet",
     "claude_session_id": "9aa0...", "expires_at": 1764680030.0}

PreModelSwitch answers allow only for that switch, once: the marker must be
our own regular file, unexpired, for this session and Claude session id, its
model equal to ``requested_model`` or ``to_model`` (case-insensitive) and
``source`` must be ``command``.  The hook then claims it with an atomic
rename, so a replay finds nothing.  ``_fasthook/marker.pxi`` is the compiled
twin (tests/policy/test_marker_twins.py).  Builtins only (hook hot path).
"""

from __future__ import annotations

import posix
import time

from aipager.proto import paths
from aipager.proto import fsio

TTL_SECONDS = 30.0
MAX_MARKER = 4096

ALLOW_REASON = "Model switch requested from aipager (Telegram / Mini App)"

_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def valid_session(session) -> bool:
    return isinstance(session, str) and 0 < len(session) <= 160 and set(session) <= _NAME_CHARS


def write_modelswitch_marker(
    env, session: str, model: str, claude_session_id: str, now: float | None = None
) -> str:
    """Announce the ``/model`` switch aipager is about to type (daemon side).

    Returns:
        The marker's path.

    Raises:
        ValueError: bad session name, empty model or Claude session id.
    """
    if not valid_session(session) or not model or not claude_session_id:
        msg = "model-switch marker needs a valid session, model and Claude session id"
        raise ValueError(msg)
    now = time.time() if now is None else now
    path = paths.modelswitch_marker(env, session)
    from aipager.proto import trust  # daemon side: the hook's claim stays clear of os (import cost)

    trust.make_folder(paths.control_dir(env))
    doc = {
        "v": 1,
        "session": session,
        "model": model,
        "claude_session_id": claude_session_id,
        "expires_at": now + TTL_SECONDS,
    }
    fsio.write_json_atomic(path, doc)
    return path


def _matches(doc, session: str, event: dict, now: float) -> bool:
    if not isinstance(doc, dict) or doc.get("v") != 1 or doc.get("session") != session:
        return False
    expires = doc.get("expires_at")
    if not isinstance(expires, (int, float)) or now > expires or expires - now > TTL_SECONDS + 5:
        return False
    claude_id = doc.get("claude_session_id")
    if not isinstance(claude_id, str) or not claude_id or claude_id != event.get("session_id"):
        return False
    model = doc.get("model")
    if not isinstance(model, str) or not model:
        return False
    wanted = [event.get("requested_model"), event.get("to_model")]
    return any(isinstance(w, str) and w.lower() == model.lower() for w in wanted)


def claim(env, session: str, event: dict, now: float | None = None) -> bool:
    """True when this PreModelSwitch is the one aipager announced; uses it up."""
    if event.get("source") != "command" or not valid_session(session):
        return False
    now = time.time() if now is None else now
    path = paths.modelswitch_marker(env, session)
    data = fsio.read_own(path, MAX_MARKER)
    if data is None:
        return False
    try:
        doc = fsio.loads(data)
    except (ValueError, UnicodeDecodeError):
        return False
    if isinstance(doc, dict) and isinstance(doc.get("expires_at"), (int, float)):
        if now > doc["expires_at"]:
            fsio.unlink_quiet(path)  # stale: nobody may use it later
            return False
    if not _matches(doc, session, event, now):
        return False
    claimed = f"{path}.claimed-{posix.getpid()}-{posix.urandom(4).hex()}"
    try:
        posix.rename(path, claimed)
    except OSError:
        return False  # another hook won the claim
    # the file renamed must be the one validated (not swapped in between)
    same = fsio.read_own(claimed, MAX_MARKER) == data
    fsio.unlink_quiet(claimed)
    return same


def allow_output() -> str:
    """The PreModelSwitch decision Claude Code reads from stdout."""
    return fsio.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreModelSwitch",
                "permissionDecision": "allow",
                "permissionDecisionReason": ALLOW_REASON,
            }
        }
    )
