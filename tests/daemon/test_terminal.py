"""Session I/O: discovery applied to the registry, typing into a real dtach session."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time

import pytest

from aipager.port.model import PromptNote
from aipager import dtach
from aipager.proto import paths
from aipager.daemon.events.session import end_session
from aipager.port.model import State
from aipager.daemon.terminal import DtachIO, mark_discovered
from aipager.proto.errors import SessionNotFound


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


def test_a_sessions_end_seen_first_by_its_socket_is_said_once(core, notifier):
    """Killed: discovery sees the socket gone before Claude Code's SessionEnd hook arrives
    (a loaded machine): the hook's event no longer brings the session back to end it again
    (the chat said "Session ended" under its own "ended by @owner")."""
    reg = core.registry
    end = lambda sess, why: end_session(core.ctx, sess, why)  # noqa: E731
    mark_discovered(reg, {"claude-b": "/s/b"}, end)
    core.feed({"hook_event_name": "SessionStart", "session": "claude-b", "session_id": "s",
               "source": "startup"})
    mark_discovered(reg, {}, end)
    core.feed({"hook_event_name": "SessionEnd", "session": "claude-b", "reason": "other"})
    assert len(notifier.notices("session_end")) == 1
    assert reg.get("claude-b").state == State.GONE
    # a session that is clearly alive after all (it works) is still known again
    core.feed({"hook_event_name": "UserPromptSubmit", "session": "claude-b", "prompt": "x"})
    assert reg.get("claude-b").state == State.WORKING


def _recording_session(name: str, stty: str, out):
    """A dtach session ``name`` whose program writes what it reads to ``out``."""
    env = dict(os.environ)
    sock = paths.dtach_socket(env, f"claude-{name}")
    ready = f"{out}.ready"
    argv = dtach.create_argv(dtach.dtach_binary(env), sock,
                             ["sh", "-c", f"stty {stty}; : > {ready}; cat > {out}"])
    subprocess.run(argv, check=True, env=env)
    end = time.monotonic() + 5
    # live, and its terminal set (before ``stty raw`` the line discipline would eat Ctrl-U
    # and Backspace as line editing)
    while not (dtach.is_live(sock) and os.path.exists(ready)):
        assert time.monotonic() < end
        time.sleep(0.02)
    return env


@pytest.fixture
def cat_session(tmp_path):
    out = tmp_path / "typed.txt"
    env = _recording_session("tt", "-echo", out)
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


@pytest.fixture
def raw_session(tmp_path):
    """A session that records the raw bytes it is sent (no line editing in between)."""
    out = tmp_path / "raw.bin"
    env = _recording_session("raw", "raw -echo", out)
    yield env, out
    dtach.kill(env, "raw")


def _wait_bytes(out, want: bytes) -> bytes:
    end = time.monotonic() + 5
    while want not in (out.read_bytes() if out.exists() else b""):
        assert time.monotonic() < end, out.read_bytes() if out.exists() else "no output"
        time.sleep(0.02)
    return out.read_bytes()


NOTE = PromptNote(5, -100, "", 7, "ana", "user")


async def test_a_prompt_goes_in_as_one_paste_then_enter(raw_session):
    from aipager.policy import notes

    from aipager.policy import chatprompt

    env, out = raw_session
    text = chatprompt.encode("line one\nline two\t!not a shell", label="ana", role="user").text
    await DtachIO(env).type_prompt("claude-raw", text, note=dataclasses.replace(NOTE, text=text))
    data = _wait_bytes(out, b"\r")
    # the box emptied first (a leftover is never glued on), then one paste, then Enter
    assert data == dtach.CLEAR_INPUT + dtach.PASTE_START + text.encode() + dtach.PASTE_END + b"\r"
    assert [n.doc["text"] for n in notes.list_notes(env, "claude-raw")] == [text]
    assert not os.path.exists(paths.typing_mark(env, "claude-raw"))


async def test_the_daemons_own_typing_is_not_somebody_at_the_computer(raw_session):
    """``dtach -p`` is a client of the session's socket as long as it types (a paste waits
    before its Enter): discovery read it as an attached terminal, and the answer to the
    message being typed arrived silently ("quiet at the computer").  A real terminal still
    counts while the daemon types."""
    import asyncio
    import socket as _socket

    env, out = raw_session
    io = DtachIO(env)
    # discovery's own liveness probe is a client for a moment too
    assert not any(io.attached(io.discover())["claude-raw"] for _ in range(5))
    live = io.discover()
    sock = live["claude-raw"]
    from aipager.policy import chatprompt

    # a paste this long waits over half a second before its Enter
    text = chatprompt.encode("x" * 3000, label="ana", role="user").text
    typing = asyncio.ensure_future(
        io.type_prompt("claude-raw", text, note=dataclasses.replace(NOTE, text=text)))
    seen = []
    while not typing.done():
        if dtach.attached_clients([sock])[sock]:  # our push is connected now
            seen.append(io.attached(live)["claude-raw"])
        await asyncio.sleep(0.02)
    await typing
    assert seen and not any(seen), seen
    terminal = _socket.socket(_socket.AF_UNIX)
    terminal.connect(sock)
    try:
        end = time.monotonic() + 5
        while not io.attached(live)["claude-raw"]:
            assert time.monotonic() < end, "an attached terminal was not seen"
            await asyncio.sleep(0.02)
    finally:
        terminal.close()


@pytest.mark.parametrize("text", ["!id", " /exit", "a\x03b", "a\x1b[201~b", "hello",
                                  "Via aipager, from ana (user):\n\x1b[201~x",
                                  "Via aipager, from a\nb (user):\nx"])
async def test_what_is_not_an_encoding_is_never_typed(raw_session, text):
    """Only ``chatprompt.encode``'s output reaches the input line: raw text never does."""
    from aipager.policy import notes

    env, out = raw_session
    with pytest.raises(ValueError):
        await DtachIO(env).type_prompt("claude-raw", text, note=dataclasses.replace(NOTE, text=text))
    assert notes.list_notes(env, "claude-raw") == []
    assert not (out.exists() and out.read_bytes())


async def test_a_crash_in_the_typing_window_is_cleared_at_the_next_start(raw_session):
    """The daemon died between the paste and its Enter: its mark and note are left.  The
    next start empties the input box (Ctrl-U, which leaves a running task alone), deletes
    the note (nobody's rights) and reports the message."""
    from aipager.policy import notes
    from aipager.proto import fsio

    env, out = raw_session
    note = notes.write_note(env, "claude-raw", **dataclasses.replace(NOTE, text="half typed").args())
    fsio.write_json_atomic(paths.typing_mark(env, "claude-raw"),
                            {"note": note, "chat_id": -100, "msg_id": 5})
    found = await DtachIO(env).recover_typing()
    assert found == [{"session": "claude-raw", "note": note, "chat_id": -100, "msg_id": 5}]
    assert _wait_bytes(out, dtach.CLEAR_INPUT) == dtach.CLEAR_INPUT
    assert notes.list_notes(env, "claude-raw") == []
    assert not os.path.exists(paths.typing_mark(env, "claude-raw"))
    assert await DtachIO(env).recover_typing() == []
