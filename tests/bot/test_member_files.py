"""A member's photo in a team group: kept in that member's own folder, and read by their
task alone (the safety floor keeps the files folder from every task but the owner's).
The real aiogram against the fake Bot API, then the hook's own pick-up of the note the
daemon wrote (``hookside.task_rules``) and the matcher."""

from __future__ import annotations

import os
import time

import pytest
from bot.conftest import eventually

from aipager import config
from aipager.proto import paths
from aipager.policy import _match_py, hookside, notes, snapshot

GROUP = -100779
OLGA = {"id": 11, "is_bot": False, "first_name": "Olga", "username": "olga"}
ANA = {"id": 13, "is_bot": False, "first_name": "Ana", "username": "ana"}
BEN = {"id": 14, "is_bot": False, "first_name": "Ben", "username": "ben"}


@pytest.fixture
def group():
    return GROUP


@pytest.fixture
def members():
    return (config.Member(OLGA["id"], "owner", "olga"), config.Member(ANA["id"], "user", "ana"),
            config.Member(BEN["id"], "user", "ben"))


def _task(env, session: str, author: int, role: str, text: str) -> dict:
    """The snapshot the hook writes when ``author``'s message ``text`` is taken."""
    notes.write_note(env, session, msg_id=1, chat_id=GROUP, author_user_id=author,
                     author_label="x", role=role, text=text)
    consumed, _expired, waiting = notes.pickup(env, session, text, time.time())
    assert len(consumed) == 1
    return snapshot.normalise(hookside.task_rules(env, consumed, waiting, time.time()))


async def test_a_members_photo_is_theirs_alone(chat):
    env = chat.bot.env
    session = chat.start("jim")
    await chat.fake.user_says("/status", user=OLGA, chat_id=GROUP)
    await chat.fake.wait_for("sendMessage", lambda p: int(p["chat_id"]) == GROUP)
    bot_msg = chat.fake.bot_messages(GROUP)[-1]["message_id"]
    # (in a group the bot takes what replies to it)
    await chat.fake.user_sends_document(b"\xff\xd8 ana's photo", "photo.jpg", caption="what is this",
                                        user=ANA, chat_id=GROUP, reply_to=bot_msg)
    typed = await eventually(lambda: chat.sessions.typed, what="the prompt typed")
    name, prompt, note = typed[0]
    assert name == session and note["author_user_id"] == ANA["id"]
    path = prompt.rsplit(" ", 1)[1]
    assert os.path.dirname(path) == paths.uploads_dir(env, ANA["id"])
    with open(path, "rb") as fh:
        assert fh.read() == b"\xff\xd8 ana's photo"

    home = paths.home(env)
    read = ("Read", {"file_path": path}, home, home)
    assert _match_py.decide(_task(env, "claude-t1", ANA["id"], "user", "ana's"), *read)[0] == "allow"
    assert _match_py.decide(_task(env, "claude-t2", BEN["id"], "user", "ben's"), *read)[0] == "deny"
    assert _match_py.decide(_task(env, "claude-t3", OLGA["id"], "owner", "olga's"), *read)[0] == "allow"
