"""A message typed into an idle session that Claude Code never takes was declined (it sits in
the input box): the daemon empties the box, deletes its note and tells its author
(``Daemon._check_taken``).  The real ``Daemon``; the terminal is ``fakes.sessionio``,
writing the note as ``DtachIO`` does."""

from __future__ import annotations

import asyncio
import os

import pytest
from fakes.sessionio import FakeSessions

from aipager.port.model import PromptNote
from aipager import dtach
from aipager.daemon import calls
from aipager.daemon.app import Daemon
from aipager.port.outputs import Notice, NoticeName, RecordingNotifier
from aipager.policy import notes

S = "claude-jim"
NOTE = PromptNote(5, -100, "", 7, "ana", "user")


class NotingSessions(FakeSessions):
    """Writes the message's permission note as the real terminal does before typing."""

    def __init__(self, env) -> None:
        super().__init__()
        self.env = env

    async def type_prompt(self, session, text, *, note, submitting=None):
        notes.write_note(self.env, session, **note.args())
        await super().type_prompt(session, text, note=note, submitting=submitting)


@pytest.fixture
def rig(monkeypatch):
    monkeypatch.setattr(calls, "DECLINE_SECONDS", 0.05)
    env = dict(os.environ)
    notifier = RecordingNotifier()
    sessions = NotingSessions(env)
    sessions.live.add(S)
    daemon = Daemon(env, notifier=notifier, session_io=sessions)
    daemon.core.feed({"hook_event_name": "SessionStart", "session": S, "source": "startup",
                      "session_id": "c1", "cwd": "/tmp"})
    yield daemon, notifier, sessions
    daemon.journal.close()


def _not_taken(notifier) -> list:
    return [o for o in notifier.outputs if isinstance(o, Notice) and o.notice == NoticeName.NOT_TAKEN]


async def test_a_message_an_idle_claude_never_takes_is_cleared_and_told(rig) -> None:
    daemon, notifier, sessions = rig
    assert daemon.core.registry.get(S).state == "ready"
    await daemon.type_prompt(S, "hello \u202e there", note=NOTE)
    await asyncio.sleep(0.3)
    assert notes.list_notes(daemon.env, S) == [], "its note deleted: a late submission is blocked"
    assert sessions.keys == [(S, [dtach.CLEAR_INPUT])], "the input box emptied"
    [told] = _not_taken(notifier)
    assert (told.extra["chat_id"], told.extra["msg_id"]) == (-100, 5)


async def test_a_message_claude_takes_is_left_alone(rig) -> None:
    daemon, notifier, sessions = rig
    await daemon.type_prompt(S, "hello", note=NOTE)
    # the hook's pick-up took the note (what Claude Code's UserPromptSubmit does)
    for note in notes.list_notes(daemon.env, S):
        os.unlink(note.path)
    await asyncio.sleep(0.3)
    assert sessions.keys == [] and _not_taken(notifier) == []


async def test_a_busy_session_queues_the_message_and_is_not_checked(rig) -> None:
    daemon, notifier, sessions = rig
    daemon.core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "go"})
    await daemon.type_prompt(S, "and then this", note=NOTE)
    await asyncio.sleep(0.3)
    assert len(notes.list_notes(daemon.env, S)) == 1, "Claude Code holds it in its queue"
    assert sessions.keys == [] and _not_taken(notifier) == []
