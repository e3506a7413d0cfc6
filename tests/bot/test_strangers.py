"""What people outside the team can make the bot do in a team group: a few answers, last in
line; no code used up by members; no label that passes for somebody else.  The real aiogram
against the fake Bot API; what it received and the audit log decide."""

from __future__ import annotations

import json

import pytest
from bot.conftest import eventually

from aipager import config
from aipager.proto import paths
from aipager.bot import strangers

GROUP = -100778
OLGA = {"id": 11, "is_bot": False, "first_name": "Olga", "username": "olga"}
ADAM = {"id": 12, "is_bot": False, "first_name": "Adam", "username": "adam"}
ANA = {"id": 13, "is_bot": False, "first_name": "Ana", "username": "ana"}
SAM = {"id": 15, "is_bot": False, "first_name": "Sam", "username": "sam"}
NIA = {"id": 99, "is_bot": False, "first_name": "Nia", "username": "nia"}


@pytest.fixture
def group():
    return GROUP


@pytest.fixture
def members():
    return (config.Member(OLGA["id"], "owner", "olga"), config.Member(ADAM["id"], "admin", "adam"),
            config.Member(ANA["id"], "user", "ana"))


def _posts(chat):
    """The group's successfully sent texts, in the order Telegram took them."""
    return [str(p["text"]) for p in chat.fake.calls_of("sendMessage", ok=True)
            if int(p["chat_id"]) == GROUP]


def _audit(chat, action):
    try:
        with open(paths.audit_log(chat.bot.env), encoding="utf-8") as fh:
            return [r for r in map(json.loads, fh) if r["action"] == action]
    except FileNotFoundError:
        return []


async def _says(chat, user, text, **kw):
    return await chat.fake.user_says(text, user=user, chat_id=GROUP, **kw)


async def _answer(chat, pred, timeout=10.0):
    return await chat.fake.wait_for("sendMessage", lambda p: int(p["chat_id"]) == GROUP
                                    and pred(str(p["text"])), timeout)


async def _settled(chat, n=1):
    """Everything sent before now has been handled: updates of a chat are handled in order,
    so once the owner's ``n``-th /whoami is answered, all before it were."""
    await _says(chat, OLGA, "/whoami")
    await eventually(lambda: sum("You are @olga" in t for t in _posts(chat)) >= n, 10)


async def _invite(chat, role="user"):
    await _says(chat, ADAM, f"/invite {role}")
    said = await _answer(chat, lambda t: "/join" in t)
    return said["text"].split("/join ", 1)[1].split()[0]


async def test_a_flood_of_wrong_codes_gets_three_answers_after_the_teams(chat):
    # Telegram asks the bot to wait 3 s after the stranger's first answer: while it waits,
    # the owner's answer is queued behind it, and 199 more wrong codes arrive.
    chat.fake.fail("sendMessage", 429, retry_after=3)
    await _says(chat, SAM, "/join 00000000")
    await chat.fake.wait_for("sendMessage", ok=False)
    await _says(chat, OLGA, "/whoami")
    for i in range(1, 200):
        await _says(chat, SAM, f"/join {i:08x}")
    await _settled(chat, 2)
    await eventually(lambda: chat.bot.outbox.idle(), 10)
    posts = _posts(chat)
    refusals = [t for t in posts if "not valid" in t]
    # The owner's answer went first although the stranger's was queued before it.
    assert "You are @olga" in posts[0]
    assert len(refusals) == strangers.TRIES == 3
    assert "No more tries" in refusals[-1]
    assert len(posts) == 5  # two answers to the owner, three to the stranger
    refused = _audit(chat, "join_refused")
    assert [(r["who_id"], r["tries_left"]) for r in refused] == [(15, 2), (15, 1), (15, 0)]
    # 197 silenced attempts: three records (the 1st, 10th, 100th), each naming the sender.
    silenced = _audit(chat, "join_silenced")
    assert [(r["who_id"], r["count"]) for r in silenced] == [(15, 1), (15, 10), (15, 100)]


async def test_a_locked_out_stranger_cannot_join_even_with_the_right_code(chat):
    code = await _invite(chat)
    for i in range(3):
        await _says(chat, SAM, f"/join bad{i}")
    await _says(chat, SAM, f"/join {code}")
    await _settled(chat)
    await eventually(lambda: sum("not valid" in t for t in _posts(chat)) == 3)
    assert not any("Welcome" in t for t in _posts(chat))
    assert SAM["id"] not in {m.id for m in config.load(chat.bot.env).members}
    assert _audit(chat, "join_silenced")[0]["reason"] == "locked out"
    # The code was left for the person it was made for.
    await _says(chat, NIA, f"/join {code}")
    await _answer(chat, lambda t: "Welcome, nia" in t)


async def test_strangers_share_one_budget_per_chat(chat):
    others = [{"id": 200 + i, "is_bot": False, "first_name": f"X{i}", "username": f"x{i}"}
              for i in range(3)]
    for user in others:
        for i in range(3):
            await _says(chat, user, f"/join bad{i}")
    await _says(chat, {"id": 300, "is_bot": False, "first_name": "Yo"}, "hello bot")
    await _settled(chat)
    await eventually(lambda: chat.bot.outbox.idle(), 10)
    stranger_posts = [t for t in _posts(chat) if "not valid" in t or "not a member" in t]
    assert len(stranger_posts) == strangers.CHAT_REPLIES == 5
    assert len(_audit(chat, "join_refused")) == 5
    assert _audit(chat, "join_silenced")[0]["who_id"] == others[1]["id"]


async def test_a_members_join_uses_up_no_code(chat):
    code = await _invite(chat)
    await _says(chat, ANA, f"/join {code}")
    await _answer(chat, lambda t: "@ana is a member already" in t)
    assert _audit(chat, "join_refused")[0]["who_id"] == ANA["id"]
    await _says(chat, NIA, f"/join {code}")
    await _answer(chat, lambda t: "Welcome, nia: you joined as user." in t)
    roles = {m.id: (m.role, m.label) for m in config.load(chat.bot.env).members}
    assert roles[ANA["id"]] == ("user", "ana") and roles[NIA["id"]] == ("user", "nia")


@pytest.mark.parametrize("name, looks_like", [
    ({"username": "owner"}, "a role"),
    ({"first_name": "Ana"}, "another member"),
    ({"first_name": "@olga"}, "a mention"),
    ({"first_name": "ＡＤＭＩＮ"}, "a role"),  # fullwidth letters (NFKC)
    ({"first_name": "a\u200bna"}, "another member"),  # a zero-width space
    ({"first_name": "\u3164"}, "nothing"),  # a filler that shows as a blank
    ({"first_name": "12"}, "another member"),  # Adam's id
])
async def test_a_name_that_passes_for_someone_else_is_not_a_label(chat, name, looks_like):
    code = await _invite(chat)
    newcomer = {"id": 4321, "is_bot": False, "first_name": "", **name}
    await _says(chat, newcomer, f"/join {code}")
    said = await _answer(chat, lambda t: "Welcome" in t)
    assert said["text"] == (f"Welcome, 4321: you joined as user. Your name looked like "
                            f"{looks_like}, so the label is 4321.")
    labels = {m.id: m.label for m in config.load(chat.bot.env).members}
    assert labels[4321] == "4321"
    refused = _audit(chat, "label_refused")
    assert [(r["who_id"], r["wanted"], r["looked_like"]) for r in refused] == [
        (4321, name.get("username") or name["first_name"], looks_like)]


async def test_a_role_given_by_reply_gets_a_safe_label_too(chat):
    impostor = {"id": 4444, "is_bot": False, "first_name": "ANA"}
    said = await _says(chat, impostor, "hi, add me?")
    await _says(chat, ADAM, "/role user", reply_to=said["message_id"])
    answer = await _answer(chat, lambda t: "is now user" in t)
    assert answer["text"] == ("4444 is now user (by @adam). Their name looked like another "
                              "member, so the label is 4444.")
    assert {m.id: m.label for m in config.load(chat.bot.env).members}[4444] == "4444"
    refused = _audit(chat, "label_refused")
    assert [(r["who_id"], r["target_id"]) for r in refused] == [(ADAM["id"], 4444)]
