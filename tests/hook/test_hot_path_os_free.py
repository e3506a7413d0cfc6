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

from aipager import paths


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
