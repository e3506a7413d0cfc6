"""``aipager start`` killed hard (kill -9) right after the chat showed a request and a notice,
or right after a phone message arrived (typed once after the restart: ``bot.inbox``).

The events are in the journal and not in the saved state, so the next daemon handles them
again; the chat must not show them twice (``Output.origin`` against ``ChatState.taken``),
and what comes after the restart must still be shown.  The real daemon process and its bot,
against the fake Bot API served from a thread.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI
from support.daemon_proc import wait_for

from aipager import config
from aipager.proto import paths
from aipager.bot import chatstate
from aipager.daemon import journal, persist

AIPAGER = os.path.join(os.path.dirname(sys.executable), "aipager")
SESSION = "claude-kk"


def _event(event: str, **more) -> bytes:
    return json.dumps({"hook_event_name": event, "session": SESSION, "session_id": "sid-kk",
                       "cwd": "/tmp", "transcript_path": "/nonexistent/kk.jsonl",
                       **more}).encode()


class World:
    def __init__(self, fake: FakeBotAPI, base: str) -> None:
        self.fake = fake
        self.env = {**os.environ, "AIPAGER_TELEGRAM_API_BASE": base}
        config.save(self.env, config.Config(
            bot_token=TOKEN, chat_id=OWNER["id"],
            members=(config.Member(OWNER["id"], "owner", "owner"),)))
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        ready = len(self.fake.calls_of("setMyCommands"))
        self.proc = subprocess.Popen([AIPAGER, "start"], env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for(lambda: len(self.fake.calls_of("setMyCommands")) > ready
                 or self.proc.poll() is not None, timeout=40)
        assert self.proc.poll() is None, self.proc.stderr.read().decode()

    def send(self, data: bytes) -> None:
        self.sock.sendto(data, paths.socket_path(self.env))

    def texts(self, needle: str) -> list[str]:
        return [str(p["text"]) for p in self.fake.calls_of("sendMessage") if needle in str(p["text"])]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.communicate(timeout=20)


@pytest.fixture
def world():
    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    with fake.in_thread() as base:
        w = World(fake, base)
        try:
            yield w
        finally:
            w.stop()


def test_after_a_hard_kill_the_chat_shows_nothing_twice_and_goes_on(world):
    world.start()
    events = [_event("SessionStart", source="startup"),
              _event("PreCompact", trigger="manual"),
              _event("PermissionRequest", tool_name="Bash", tool_use_id="toolu_kk1",
                     tool_input={"command": "rm -rf build", "description": "clean"})]
    for data in events:
        world.send(data)
    world.fake.wait_call("sendMessage", lambda p: "rm -rf build" in str(p["text"]), timeout=20)
    world.fake.wait_call("sendMessage", lambda p: "compacting" in str(p["text"]).lower())
    # the bot has recorded them as sent (a kill in the moment between Telegram's answer
    # and that record can still repeat one message: sending is at least once)
    wait_for(lambda: not chatstate.load(world.env).pending)
    world.proc.send_signal(signal.SIGSTOP)
    held = journal.read(paths.journal_file(world.env), 0)[0]
    if len(held) != len(events):
        world.proc.send_signal(signal.SIGCONT)
        pytest.skip("the daemon saved its state before the kill (a slow machine): "
                    "nothing would be replayed")
    world.proc.send_signal(signal.SIGKILL)
    world.proc.communicate(timeout=10)

    world.start()
    state = persist.load_state(world.env)
    assert state["daemon"]["counters"]["journal_replayed"] == len(events)
    # what happens next is shown: a second request, after the replayed one
    world.send(_event("PermissionRequest", tool_name="Bash", tool_use_id="toolu_kk2",
                      tool_input={"command": "make dist", "description": "package"}))
    world.fake.wait_call("sendMessage", lambda p: "make dist" in str(p["text"]), timeout=20)
    time.sleep(0.5)  # anything the restart would repeat has had its turn
    assert len(world.texts("rm -rf build")) == 1
    assert len([t for t in world.texts("") if "compacting" in t.lower()]) == 1
    assert len(world.texts("make dist")) == 1


@pytest.fixture
def recorder(world, tmp_path):
    """A dtach session at ``SESSION`` that records the raw bytes typed into it."""
    from aipager import dtach

    out = tmp_path / "typed.bin"
    sock = paths.dtach_socket(world.env, SESSION)
    subprocess.run(dtach.create_argv(dtach.dtach_binary(world.env), sock,
                                     ["sh", "-c", f"stty raw -echo; cat > {out}"]),
                   check=True, env=world.env)
    wait_for(lambda: dtach.is_live(sock), timeout=5)
    yield out
    dtach.kill(world.env, SESSION.removeprefix("claude-"))


def test_a_message_killed_right_after_it_arrived_is_typed_once(world, recorder):
    """kill -9 as soon as the message is in the update journal: whether its handler ran or
    not, the next daemon types it once (the journal, or its done line), never twice; a kill
    in the middle of its paste is said on the message instead."""
    world.start()
    world.send(_event("SessionStart", source="startup"))
    wait_for(lambda: any(s["name"] == SESSION for s in persist.load_state(world.env)["sessions"]),
             timeout=10)
    journal_file = paths.updates_journal_file(world.env)

    def seen(path) -> bool:
        return os.path.exists(path) and b"typed once" in open(path, "rb").read()

    world.fake.say("one message, typed once")
    # killed as soon as it is in the journal; if the bot was quicker, as soon as it is typed
    # (journaled, handled and trimmed between two looks)
    wait_for(lambda: seen(journal_file) or seen(recorder), timeout=20)
    world.proc.send_signal(signal.SIGKILL)
    world.proc.communicate(timeout=10)

    world.start()
    world.fake.say("the next one")
    wait_for(lambda: b"the next one" in (recorder.read_bytes() if recorder.exists() else b""),
             timeout=20)
    time.sleep(0.5)  # anything the restart would repeat has had its turn
    typed = _submitted(recorder, "one message, typed once")
    assert typed <= 1
    assert _submitted(recorder, "the next one") == 1
    if typed == 0:
        # the kill fell between its done line and its Enter: cleared, its author told so on it
        assert world.texts("cut this message off")


def _submitted(recorder, text: str) -> int:
    """How often ``text`` was pasted and its Enter pressed (a paste cleared before its Enter
    is followed by Ctrl-U instead)."""
    from aipager import dtach

    data = recorder.read_bytes() if recorder.exists() else b""
    return data.count(text.encode() + dtach.PASTE_END + dtach.ENTER)


#: where ``AIPAGER_TEST_CRASH_AT`` kills the daemon while it types a chat message
#: (``DtachIO._push``), and whether the message is typed at the next start (else it is
#: said on the message that it was cut off: killed between its done line and its Enter)
CRASH_POINTS = [("typing.marked", True), ("typing.pasted", True), ("typing.submitting", False),
                ("typing.entered", True)]


@pytest.mark.parametrize(("point", "typed_again"), CRASH_POINTS)
def test_a_kill_at_each_point_of_typing_a_message_types_it_once_or_says_so(
        world, recorder, point, typed_again):
    """The real daemon kills itself (SIGKILL) at ``point`` while typing a phone message into
    a real dtach session; the next start (without the crash point) either types it, once,
    or it was typed once already, or (one point: between the done line and the Enter) its
    author is told it was cut off.  Never lost silently, never typed twice."""
    world.env["AIPAGER_TEST_CRASH_AT"] = point
    world.start()
    world.send(_event("SessionStart", source="startup"))
    wait_for(lambda: any(s["name"] == SESSION for s in persist.load_state(world.env)["sessions"]),
             timeout=10)
    world.fake.say("the message at the crash point")
    assert world.proc.wait(timeout=20) == -signal.SIGKILL
    world.proc.communicate(timeout=10)
    mark = paths.typing_mark(world.env, SESSION)
    assert os.path.exists(mark) == (point != "typing.entered")  # gone once the Enter is in

    del world.env["AIPAGER_TEST_CRASH_AT"]
    world.start()
    world.fake.say("the next one")
    wait_for(lambda: _submitted(recorder, "the next one") == 1, timeout=20)
    time.sleep(0.5)  # anything the restart would repeat has had its turn
    cut = world.texts("cut this message off")
    if typed_again:
        assert _submitted(recorder, "the message at the crash point") == 1
        assert not cut
    else:
        assert _submitted(recorder, "the message at the crash point") == 0
        assert len(cut) == 1
    assert not os.path.exists(mark)
    assert _submitted(recorder, "the next one") == 1
    # typed in order: the replayed message before the next one
    data = recorder.read_bytes()
    if typed_again:
        assert data.rindex(b"the message at the crash point") < data.index(b"the next one")
