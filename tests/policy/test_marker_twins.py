"""PreModelSwitch through the installed hook: the compiled claim
(``_fasthook/marker.pxi``) against the Python twin (``marker.py``).

Each case lays out a marker (or a hostile stand-in), runs one hook, and
records what it printed, whether it forwarded anything, and what is left on
disk; the native hook and the twin must agree, and the native one must
decide itself except where it is documented to decline.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from support import hookrun

from aipager.proto import paths
from aipager.policy import marker
from aipager.proto import fsio

SESSION = "claude-mk"
NO_NATIVE = os.environ.get("AIPAGER_NO_EXTENSIONS", "") not in ("", "0")
pytestmark = pytest.mark.skipif(NO_NATIVE, reason="AIPAGER_NO_EXTENSIONS=1 run: no native hook to compare")

EVENT = {"hook_event_name": "PreModelSwitch", "session_id": "cs-1", "from_model": "claude-opus-5-5",
         "to_model": "claude-sonnet-5-5", "requested_model": "Sonnet", "source": "command"}


def doc(**change) -> dict:
    base = {"v": 1, "session": SESSION, "model": "sonnet", "claude_session_id": "cs-1",
            "expires_at": time.time() + 20}
    base.update(change)
    return {k: v for k, v in base.items() if v is not ...}


def raw(text: str):
    return lambda env, tmp: fsio.write_atomic(paths.modelswitch_marker(env, SESSION), text.encode())


def marker_doc(**change):
    return lambda env, tmp: fsio.write_json_atomic(paths.modelswitch_marker(env, SESSION), doc(**change))


def symlinked(env, tmp) -> None:
    target = os.path.join(tmp, "planted.json")
    with open(target, "w") as fh:
        json.dump(doc(), fh)
    os.symlink(target, paths.modelswitch_marker(env, SESSION))


def foreign(env, tmp) -> None:
    marker_doc()(env, tmp)
    os.chown(paths.modelswitch_marker(env, SESSION), 65534, 65534)


def padded(size: int):
    def make(env, tmp) -> None:
        text = json.dumps(doc())
        fsio.write_atomic(paths.modelswitch_marker(env, SESSION), (text + " " * (size - len(text))).encode())
    return make


# (id, lay out the marker, change to the event, the native hook declines)
CASES = [
    ("valid", marker_doc(), {}, False),
    ("to-model", marker_doc(model="CLAUDE-SONNET-5-5"), {"requested_model": "x"}, False),
    ("no-marker", lambda env, tmp: None, {}, False),
    ("picker", marker_doc(), {"source": "picker"}, False),
    ("no-source", marker_doc(), {"source": None}, False),
    ("other-claude-session", marker_doc(), {"session_id": "other"}, False),
    ("event-session-not-string", marker_doc(), {"session_id": 5}, False),
    ("other-model", marker_doc(), {"requested_model": "haiku", "to_model": "claude-haiku"}, False),
    ("other-aipager-session", marker_doc(session="claude-other"), {}, False),
    ("expired", marker_doc(expires_at=1000.0), {}, False),
    ("too-far-ahead", marker_doc(expires_at=time.time() + 3600), {}, False),
    ("expires-not-number", marker_doc(expires_at="soon"), {}, False),
    ("expires-true", marker_doc(expires_at=True), {}, True),
    ("version-2", marker_doc(v=2), {}, False),
    ("version-1.0", marker_doc(v=1.0), {}, False),
    ("version-true", marker_doc(v=True), {}, True),
    ("no-version", marker_doc(v=...), {}, False),
    ("empty-model", marker_doc(model=""), {}, False),
    ("empty-claude-id", marker_doc(claude_session_id=""), {"session_id": ""}, False),
    ("non-ascii-model", marker_doc(model="sonnét"), {"requested_model": "SONNÉT"}, True),
    ("kelvin-sign", marker_doc(model="k"), {"requested_model": "\u212a", "to_model": None}, True),
    ("not-json", raw("{"), {}, True),
    ("not-an-object", raw("[1]"), {}, False),
    ("symlink", symlinked, {}, False),
    ("exactly-the-limit", padded(4096), {}, False),
    ("over-the-limit", padded(4097), {}, False),
]
if os.getuid() == 0:
    CASES.append(("foreign-owner", foreign, {}, False))


def run_once(kind: str, env: dict, tmp: str, lay_out, event: dict) -> tuple:
    path = paths.modelswitch_marker(env, SESSION)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    for name in os.listdir(os.path.dirname(path)):
        if name.startswith("aipager-modelswitch-"):
            os.unlink(os.path.join(os.path.dirname(path), name))
    lay_out(env, tmp)
    done, declined = hookrun.run_watched(kind, json.dumps(event).encode(), env)
    left = sorted(n for n in os.listdir(os.path.dirname(path)) if n.startswith("aipager-modelswitch-"))
    return (done.exit, done.stdout, done.sent, left), declined


@pytest.mark.parametrize(("case", "lay_out", "change", "declines"), CASES, ids=[c[0] for c in CASES])
def test_marker_twins_agree(tmp_path, case, lay_out, change, declines) -> None:
    env = hookrun.hook_env(SESSION, HOME=str(tmp_path))
    event = {k: v for k, v in {**EVENT, **change}.items() if v is not None}
    native, declined = run_once("native", env, str(tmp_path), lay_out, event)
    twin, _ = run_once("twin", env, str(tmp_path), lay_out, event)
    assert native == twin
    assert declined == declines
    exit_code, stdout, sent, left = native
    assert exit_code == 0 and sent == []  # never forwarded, never refused by exit code
    # Python's == and str.lower decide the last three: the compiled side hands them over
    if case in ("valid", "to-model", "version-1.0", "exactly-the-limit", "version-true", "non-ascii-model",
                "kelvin-sign"):
        assert json.loads(stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
        assert stdout.decode() == marker.allow_output()
        assert left == []  # claimed: a replay finds nothing
    else:
        assert stdout == b""


def test_a_claimed_marker_allows_exactly_once(tmp_path) -> None:
    env = hookrun.hook_env(SESSION, HOME=str(tmp_path))
    marker.write_modelswitch_marker(env, SESSION, "sonnet", "cs-1")
    outs = []
    for kind in ("native", "native", "twin"):
        done = hookrun.run(hookrun.contender_cmd(kind, "hook"), json.dumps(EVENT).encode(), env)
        outs.append(done.stdout)
    assert outs[0].decode() == marker.allow_output()
    assert outs[1:] == [b"", b""]
