"""The twin's events without a policy step never import ``os`` (issue 4).

``import os`` alone costs ~1.2x ``python -S -I -c pass``; paths, hookpy and
the policy's file helpers use ``posix`` instead, with the same results.
"""

from __future__ import annotations

import json
import os
import pathlib
import posixpath
import subprocess
import sys

import pytest
from support import hookrun

from aipager.proto import paths


def _event(name: str) -> bytes:
    event = {"hook_event_name": name, "session_id": "s", "cwd": "/tmp", "tool_name": "Read",
             "tool_input": {"file_path": "x"}, "tool_response": {"ok": True}}
    return json.dumps(event).encode()


@pytest.mark.parametrize("name", ["Stop", "PostToolUse", "SessionStart", "Notification"])
def test_twin_sends_without_importing_os(name: str, receiver) -> None:
    done = hookrun.run(hookrun.listing_cmd("hook") + ["--capped"], _event(name), hookrun.hook_env(), receiver)
    loaded = set(done.stderr.decode().split())
    assert "aipager.hookpy.hook" in loaded and len(done.sent) == 1
    assert done.sent[0]["hook_event_name"] == name
    assert not loaded & {"os", "posixpath", "_collections_abc"}


def test_twin_environment_is_os_environ() -> None:
    """Non-ASCII and non-UTF-8 values decode exactly as os.environ does."""
    site = hookrun.twin_cmd("hook")[5]
    code = (
        f"import sys; sys.path.insert(0, {site!r})\n"
        "from aipager.hookpy import common\n"
        "env = common.environ()\n"
        "assert 'os' not in sys.modules\n"
        "import os\n"
        "print(env == dict(os.environ), type(env).__name__, common.environ() is os.environ)\n"
    )
    env = {"PATH": os.environ["PATH"], "AIPAGER_A": "café", "AIPAGER_B": "raw\udcff", "AIPAGER_C": ""}
    out = subprocess.run([sys.executable, "-S", "-I", "-c", code], env=env, capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "dict", "True"]


PARTS = ["", "/", "//", "a", "a/", "/a/b", "/a//", "a/b/", "///a", "claude-x.json"]


def test_paths_helpers_match_posixpath() -> None:
    for a in PARTS:
        assert paths._dirname(a) == posixpath.dirname(a), a
        assert paths._isabs(a) == posixpath.isabs(a), a
        for b in PARTS:
            assert paths._join(a, b) == posixpath.join(a, b), (a, b)
            assert paths._join(a, b, "c") == posixpath.join(a, b, "c"), (a, b)
    # anything but str goes to os.path unchanged
    assert paths._join(pathlib.Path("/a"), "b") == "/a/b"
    assert paths._dirname(b"/a/b") == b"/a"
    assert paths._isabs(pathlib.Path("/a"))


def _policy_events(tmp_path) -> dict:
    (tmp_path / "report.txt").write_text("hello\n")
    base = {"session_id": "s", "cwd": str(tmp_path), "tool_use_id": "t"}
    return {
        "SendUserFile": dict(base, hook_event_name="PreToolUse", tool_name="SendUserFile",
                             tool_input={"files": ["report.txt"]}),
        # a non-ASCII path: the compiled side declines, the twin resolves it
        "Read café": dict(base, hook_event_name="PreToolUse", tool_name="Read",
                          tool_input={"file_path": "café/../report.txt"}),
        "PreModelSwitch": dict(base, hook_event_name="PreModelSwitch", source="command",
                               requested_model="opus"),
    }


@pytest.mark.parametrize("case", ["SendUserFile", "Read café", "PreModelSwitch"])
def test_policy_paths_that_start_python_skip_os(case: str, tmp_path, receiver) -> None:
    """The steps the compiled hook hands to Python (file checks, path
    resolution, the model-switch marker) do not import os either: it would
    cost ~0.2x the python floor on every such call."""
    env = hookrun.hook_env(HOME=str(tmp_path))
    event = _policy_events(tmp_path)[case]
    if case == "PreModelSwitch":
        from aipager.policy import marker

        marker.write_modelswitch_marker(env, "claude-jim", "opus", "s")
    done = hookrun.run(hookrun.listing_cmd("hook") + ["--capped"], json.dumps(event).encode(), env, receiver)
    loaded = set(done.stderr.decode().split())
    assert done.exit == 0
    # the step ran and decided (an allow prints nothing for PreToolUse)
    if case == "PreModelSwitch":
        assert b'"permissionDecision":"allow"' in done.stdout
        assert "aipager.policy.marker" in loaded
    else:
        assert done.stdout == b""
        assert "aipager.policy._match_py" in loaded
    assert not loaded & {"os", "posixpath", "_collections_abc"}


def _tree(root: pathlib.Path) -> list[str]:
    """Folders, files and symlinks of every kind realpath has to walk."""
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_text("x")
    (root / "a" / "up").symlink_to("..")
    (root / "a" / "rel").symlink_to("b/f.txt")
    (root / "abs").symlink_to(root / "a" / "b")
    (root / "chain").symlink_to("abs")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "self").symlink_to("self/x")
    (root / "dangling").symlink_to("nowhere")
    (root / "a" / "deep").symlink_to("../chain/../b/./f.txt")
    r = str(root)
    return [r, r + "/a/b/f.txt", r + "/a/up/a/up/abs", r + "/a/rel", r + "/chain/f.txt", r + "/chain/..",
            r + "/abs/../b/../../chain", r + "/loop1", r + "/loop2/x", r + "/self", r + "/dangling",
            r + "/a/deep", r + "/a/b/f.txt/x", r + "/a//b/./f.txt", r + "/../" + r + "/a/up/..",
            r + "/missing/../a", "/", "/.."]


def test_realpath_strict_matches_posixpath(tmp_path) -> None:
    from aipager.proto import fsio

    for path in _tree(tmp_path):
        try:
            want = posixpath.realpath(path, strict=True)
        except OSError:
            want = OSError
        try:
            got = fsio.realpath_strict(path)
        except OSError:
            got = OSError
        assert got == want, path
