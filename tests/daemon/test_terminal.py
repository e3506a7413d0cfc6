"""Session I/O: discovery applied to the registry, typing into a real dtach session."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from aipager import dtach, paths
from aipager.daemon.events.session import end_session
from aipager.daemon.model import State
from aipager.daemon.terminal import DtachIO, mark_discovered
from aipager.errors import SessionNotFound


def test_discovery_registers_new_and_ends_vanished(core, notifier):
    reg = core.registry
    end = lambda sess, why: end_session(core.ctx, sess, why)  # noqa: E731
    mark_discovered(reg, {"claude-a": "/s/a", "claude-b": "/s/b"}, end)
    assert {s.name for s in reg} == {"claude-a", "claude-b"}
    assert reg.get("claude-a").state == State.UNKNOWN
    core.feed({"hook_event_name": "UserPromptSubmit", "session": "claude-c", "prompt": "x"})  # no socket seen
    gone = mark_discovered(reg, {"claude-a": "/s/a"}, end)
    assert gone == ["claude-b"] and reg.get("claude-b").state == State.GONE
    assert reg.get("claude-c").state == State.WORKING
    assert notifier.notices("session_end") == ["🔴 b · Session gone (its terminal closed or was killed)"]
    mark_discovered(reg, {"claude-a": "/s/a", "claude-b": "/s/b"}, end)
    assert reg.get("claude-b").state == State.UNKNOWN  # back again (resumed)


@pytest.fixture
def cat_session(tmp_path):
    env = dict(os.environ)
    sock = paths.dtach_socket(env, "claude-tt")
    out = tmp_path / "typed.txt"
    argv = dtach.create_argv(dtach.dtach_binary(env), sock, ["sh", "-c", f"stty -echo; cat > {out}"])
    subprocess.run(argv, check=True, env=env)
    end = time.monotonic() + 5
    while not dtach.is_live(sock):
        assert time.monotonic() < end
        time.sleep(0.02)
    yield env, out
    dtach.kill(env, "tt")


async def test_type_text_into_a_real_session(cat_session):
    env, out = cat_session
    io = DtachIO(env)
    assert "claude-tt" in io.discover()
    await io.type_text("claude-tt", "hello there")
    end = time.monotonic() + 5
    while "hello there\n" not in (out.read_text() if out.exists() else ""):
        assert time.monotonic() < end, out.read_text() if out.exists() else "no output"
        time.sleep(0.02)


async def test_type_text_into_a_missing_session_fails():
    with pytest.raises(SessionNotFound):
        await DtachIO(dict(os.environ)).type_text("claude-nobody", "x")
