"""A team group: owner, admin, user, read_only and a stranger each try the same things;
what the fake Bot API received and what reached the terminal decide each outcome."""

from __future__ import annotations

import json
import os

import pytest
from support.screens import rows
from bot.conftest import eventually

from aipager import config
from aipager.bot.callbacks import SessionAct, SessionTap, VoiceAct, VoiceTap
from aipager.proto import paths

GROUP = -100777
PEOPLE = {
    "owner": {"id": 11, "is_bot": False, "first_name": "Olga", "username": "olga"},
    "admin": {"id": 12, "is_bot": False, "first_name": "Adam", "username": "adam"},
    "user": {"id": 13, "is_bot": False, "first_name": "Ursula", "username": "ursula"},
    "read_only": {"id": 14, "is_bot": False, "first_name": "Rita", "username": "rita"},
    "stranger": {"id": 15, "is_bot": False, "first_name": "Sam", "username": "sam"},
}
MEMBERS = tuple(config.Member(PEOPLE[r]["id"], r, PEOPLE[r]["username"])
                for r in ("owner", "admin", "user", "read_only"))


@pytest.fixture
def group():
    return GROUP


@pytest.fixture
def members():
    return MEMBERS


async def _reply(chat, user, pred=lambda p: True, timeout=5.0):
    return await chat.fake.wait_for("sendMessage", lambda p: int(p["chat_id"]) == GROUP and pred(p),
                                    timeout)


async def _says(chat, who, text, **kw):
    return await chat.fake.user_says(text, user=PEOPLE[who], chat_id=GROUP, **kw)


def _owner_task(chat):
    """The owner's running task (typed at the terminal) with a permission request open."""
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="deploy", prompt_id="p1")
    chat.feed(session, "PermissionRequest", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "make deploy", "description": "Deploy"})
    return session


PROMPT = {"owner": "typed", "admin": "typed", "user": "held", "read_only": "refused",
          "stranger": "ignored"}


@pytest.mark.parametrize("who", list(PEOPLE))
async def test_prompt(chat, who):
    session = chat.start("jim")
    await _says(chat, who, "/jim check the logs")
    expected = PROMPT[who] if who != "user" else "typed"  # nothing runs yet: the user may too
    if expected == "typed":
        typed = await eventually(lambda: chat.sessions.typed)
        assert typed[0][:2] == (session, "check the logs")
        assert (typed[0][2]["author_user_id"], typed[0][2]["role"]) == (PEOPLE[who]["id"], who)
    elif expected == "refused":
        said = await _reply(chat, who, lambda p: "may not send" in p["text"])
        assert said
    else:
        said = await _reply(chat, who, lambda p: "not a member" in p["text"])
        assert said
    if expected != "typed":
        assert chat.sessions.typed == []


TAP = {"owner": "allowed", "admin": "allowed", "user": "task's author", "read_only": "may not",
       "stranger": "not a member"}


@pytest.mark.parametrize("who", list(PEOPLE))
async def test_tap_allow_on_someone_elses_task(chat, who):
    session = _owner_task(chat)
    chat.sessions.screens[session] = rows("permission_bash")  # its dialog is up, no hook waits
    await chat.fake.wait_for("sendMessage", lambda p: "make deploy" in p["text"])
    request = next(m for m in chat.fake.bot_messages(GROUP) if "make deploy" in m["text"]
                   and m.get("reply_markup"))
    allow = request["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    query = await chat.fake.user_taps(request["message_id"], allow, user=PEOPLE[who],
                                      chat_id=GROUP)
    toast = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == query)
    if TAP[who] == "allowed":
        assert toast["text"] == "Allowed"
        assert chat.sessions.keys == [(session, [b"1"])]
        with open(paths.audit_log(chat.bot.env), encoding="utf-8") as fh:
            record = [json.loads(line) for line in fh][-1]
        assert (record["who_id"], record["role"]) == (PEOPLE[who]["id"], who)
    else:
        assert TAP[who] in toast["text"].lower()
        assert chat.sessions.keys == []
        assert chat.daemon.core.registry.get(session).requests[0].answered == ""


STOP = {"owner": "sent", "admin": "sent", "user": "author", "read_only": "author",
        "stranger": "not a member"}


@pytest.mark.parametrize("who", list(PEOPLE))
async def test_stop(chat, who):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="long job", prompt_id="p1")
    await _says(chat, who, "/stop")
    said = await _reply(chat, who, lambda p: "Stop" in p["text"] or "🔒" in p["text"]
                        or "not a member" in p["text"])
    assert STOP[who] in said["text"].lower() if STOP[who] != "sent" else "Stop sent" in said["text"]
    assert chat.sessions.keys == ([(session, [b"\x1b"])] if STOP[who] == "sent" else [])


MANAGE = {"owner": True, "admin": True, "user": False, "read_only": False, "stranger": False}


@pytest.mark.parametrize("who", list(PEOPLE))
@pytest.mark.parametrize("command, allowed_reply", [
    ("/kill jim", "End session jim?"), ("/new", "Name for the new session?"),
    ("/members", "Members:"), ("/resume", "No ended session")])
async def test_management(chat, who, command, allowed_reply):
    chat.start("jim")
    await _says(chat, who, command)
    said = await _reply(chat, who)
    if MANAGE[who]:
        assert allowed_reply in said["text"]
    elif who == "stranger":
        assert "not a member" in said["text"]
    else:
        assert said["text"].startswith("🔒") and "admin" in said["text"]


async def test_a_users_message_waits_for_anothers_task_and_goes_in_after(chat):
    session = chat.start("jim")
    # The admin's task runs (Claude took the admin's message).
    await _says(chat, "admin", "/jim refactor the parser")
    await eventually(lambda: chat.sessions.typed)
    first = chat.sessions.typed[0][2]
    chat.feed(session, "queue_pickup", consumed=[{"msg_id": first["msg_id"], "chat_id": GROUP,
                                                  "author_user_id": PEOPLE["admin"]["id"]}])
    chat.feed(session, "UserPromptSubmit", prompt="refactor the parser", prompt_id="p1")
    await _says(chat, "user", "/jim also add a test")
    held = await _reply(chat, "user", lambda p: "queued after" in p["text"])
    assert "adam" in held["text"] or str(PEOPLE["admin"]["id"]) in held["text"]
    assert len(chat.sessions.typed) == 1
    # The owner joins the running task at once.
    await _says(chat, "owner", "/jim and keep the API")
    await eventually(lambda: len(chat.sessions.typed) == 2)
    assert chat.sessions.typed[1][1] == "and keep the API"
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="Refactored.")
    await eventually(lambda: len(chat.sessions.typed) == 3)
    assert chat.sessions.typed[2][1] == "also add a test"
    assert chat.sessions.typed[2][2]["author_user_id"] == PEOPLE["user"]["id"]


async def test_group_chatter_is_ignored_and_replies_and_mentions_count(chat):
    session = chat.start("jim")
    await _says(chat, "owner", "lunch anyone?")
    await _says(chat, "owner", "@aipager_test_bot run the tests")
    typed = await eventually(lambda: chat.sessions.typed)
    assert [t[1] for t in typed] == ["run the tests"]
    assert session


async def test_roles_change_from_the_chat_and_count_at_once(chat):
    chat.start("jim")
    stranger_msg = await _says(chat, "stranger", "hello?")
    await _reply(chat, "stranger", lambda p: "not a member" in p["text"])
    await _says(chat, "user", "/role admin", reply_to=stranger_msg["message_id"])
    await _reply(chat, "user", lambda p: "Only an admin" in p["text"])
    await _says(chat, "admin", "/role admin", reply_to=stranger_msg["message_id"])
    await _reply(chat, "admin", lambda p: "Only the owner" in p["text"])
    await _says(chat, "admin", "/role user", reply_to=stranger_msg["message_id"])
    await _reply(chat, "admin", lambda p: "sam is now user" in p["text"])
    assert any(m.id == PEOPLE["stranger"]["id"] and m.role == "user"
               for m in config.load(chat.bot.env).members)
    await _says(chat, "stranger", "/whoami")
    who = await _reply(chat, "stranger", lambda p: "You are @sam" in p["text"])
    assert "role user" in who["text"]
    with open(paths.audit_log(chat.bot.env), encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    assert [(r["who"], r["who_id"], r["role"], r["target_id"], r["new_role"]) for r in records
            if r["action"] == "member_role"] == [("adam", PEOPLE["admin"]["id"], "admin",
                                                  PEOPLE["stranger"]["id"], "user")]


async def test_an_invitation_works_once(chat):
    await _says(chat, "admin", "/invite user")
    invite = await _reply(chat, "admin", lambda p: "/join" in p["text"])
    code = invite["text"].split("/join ", 1)[1].split()[0]
    newcomer = {"id": 99, "is_bot": False, "first_name": "Nia", "username": "nia"}
    await chat.fake.user_says(f"/join {code}", user=newcomer, chat_id=GROUP)
    await _reply(chat, "x", lambda p: "Welcome, nia" in p["text"])
    other = {"id": 98, "is_bot": False, "first_name": "Eve", "username": "eve"}
    await chat.fake.user_says(f"/join {code}", user=other, chat_id=GROUP)
    await _reply(chat, "x", lambda p: "not valid" in p["text"])
    roles = {m.id: m.role for m in config.load(chat.bot.env).members}
    assert roles.get(99) == "user" and 98 not in roles
    await _says(chat, "user", "/invite admin")
    await _reply(chat, "user", lambda p: "Only an admin" in p["text"])


async def test_a_groups_settings_are_the_admins_to_change(chat):
    # The settings buttons need "manage" in a group only (the handler's rights flag under
    # a filter on the chat): a user's tap is refused before anything changes.
    await _says(chat, "user", "/settings")
    settings = await _reply(chat, "user", lambda p: "Settings for this chat" in p["text"])
    diffs = next(b["callback_data"] for row in settings["reply_markup"]["inline_keyboard"]
                 for b in row if "Diff previews" in b["text"])
    message_id = next(m["message_id"] for m in chat.fake.bot_messages(GROUP)
                      if "Settings for this chat" in m["text"])
    query = await chat.fake.user_taps(message_id, diffs, user=PEOPLE["user"], chat_id=GROUP)
    toast = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == query)
    assert toast["text"] == "Only an admin may do that here."
    assert not chat.bot.state.prefs_of(GROUP).diffs
    query = await chat.fake.user_taps(message_id, diffs, user=PEOPLE["admin"], chat_id=GROUP)
    toast = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == query)
    assert toast["text"] == "Saved." and chat.bot.state.prefs_of(GROUP).diffs
    assert len([p for p in chat.fake.calls_of("answerCallbackQuery")]) == 2  # once each


# -- every button needs the right of the command that showed it ----------------------

REFUSED = {"manage": "Only an admin may do that here.",
           "prompt": "Your role may not send messages to Claude here.",
           "approve": "Your role may not answer Claude's requests."}


def _markup(chat, pred=lambda m: True):
    """The last bot message with buttons (matching ``pred``): its id and {label: data}."""
    message = [m for m in chat.fake.bot_messages(GROUP) if m.get("reply_markup") and pred(m)][-1]
    return message["message_id"], {b["text"]: b["callback_data"]
                                   for row in message["reply_markup"]["inline_keyboard"]
                                   for b in row}


async def _shown_by(chat, command, pred, who="owner"):
    """The buttons an allowed member's ``command`` showed (``pred``: its message's text)."""
    await _says(chat, who, command)
    await chat.fake.wait_for("sendMessage", lambda p: pred(str(p["text"])))
    return _markup(chat, lambda m: pred(m["text"]))


async def _two_sessions(chat):
    chat.start("jim"), chat.start("bob")


def _tap_on(cb):
    """A button of ``cb``'s kind on the owner's /status answer (kinds no command shows on
    demand: a context warning's Compact now, a voice note's ✅)."""
    async def setup(chat):
        chat.start("jim")
        handle = chat.bot.state.handle("session", "claude-jim")
        await _says(chat, "owner", "/status")
        await _reply(chat, "owner", lambda p: "jim" in p["text"])
        said = [m for m in chat.fake.bot_messages(GROUP) if "jim" in m["text"]][-1]
        return said["message_id"], {"it": cb(handle).pack()}
    return setup


async def _model(chat):
    chat.start("jim")
    await _says(chat, "owner", "/jim")
    await _reply(chat, "owner", lambda p: "go to jim now" in p["text"])
    return await _shown_by(chat, "/model", lambda t: "Switch it" in t)


async def _kill_picker(chat):
    await _two_sessions(chat)
    return await _shown_by(chat, "/kill", lambda t: "end" in t.lower() and "?" in t)


async def _kill_question(chat):
    chat.start("jim")
    return await _shown_by(chat, "/kill jim", lambda t: t.startswith("End session jim?"))


async def _resume(chat):
    session = chat.start("jim")
    chat.sessions.live.discard(session)
    chat.feed(session, "SessionEnd", reason="exit")
    return await _shown_by(chat, "/resume", lambda t: "resume" in t.lower())


async def _status(chat):
    await _two_sessions(chat)
    return await _shown_by(chat, "/status", lambda t: "Tap a session" in t)


async def _picker(chat):
    await _two_sessions(chat)
    await chat.fake.wait_for("setMyCommands")  # the bot knows its @name: the mention counts
    return await _shown_by(chat, "@aipager_test_bot run the tests",
                           lambda t: "Which session is this message for" in t)


async def _question(chat):
    session = chat.start("jim")
    questions = [{"question": "Which colour?", "header": "Colour", "multiSelect": False,
                  "options": [{"label": "Red", "description": ""}]}]
    chat.feed(session, "UserPromptSubmit", prompt="pick", prompt_id="p1")
    for event in ("PreToolUse", "PermissionRequest"):
        chat.feed(session, event, tool_name="AskUserQuestion", tool_use_id="q1",
                  tool_input={"questions": questions})
    await chat.fake.wait_for("sendMessage", lambda p: str(p["text"]).startswith("❓"))
    return _markup(chat, lambda m: m["text"].startswith("❓"))


async def _card(chat):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="long job", prompt_id="p1")
    await chat.fake.wait_for("sendMessage", lambda p: "⏹ Stop" in str(p.get("reply_markup")))
    return _markup(chat, lambda m: "⏹ Stop" in str(m["reply_markup"]))


def _settings(label):
    async def setup(chat):
        mid, buttons = await _shown_by(chat, "/settings", lambda t: "Settings for this chat" in t)
        return mid, {k: v for k, v in buttons.items() if k.startswith(label)}
    return setup


# (the button's setup, who taps, the right they lack): a ``user`` for what needs an admin,
# a ``read_only`` member for what needs the right to prompt or to answer
BUTTONS = {
    "model picker": (_model, "user", "manage"),
    "kill picker": (_kill_picker, "user", "manage"),
    "kill yes / cancel": (_kill_question, "user", "manage"),
    "resume picker": (_resume, "user", "manage"),
    "settings: reply style": (_settings("💬"), "user", "manage"),
    "settings: card detail": (_settings("🗂"), "user", "manage"),
    "settings: quiet": (_settings("🔕"), "user", "manage"),
    "settings: voice notes": (_settings("🎙"), "user", "manage"),
    "status: use a session": (_status, "read_only", "prompt"),
    "a message's session picker": (_picker, "read_only", "prompt"),
    "compact now": (_tap_on(lambda h: SessionTap(h=h, act=SessionAct.COMPACT)), "read_only",
                    "prompt"),
    "voice note": (_tap_on(lambda h: VoiceTap(h=h, act=VoiceAct.SEND)), "read_only", "prompt"),
    "question": (_question, "read_only", "approve"),
}


@pytest.mark.parametrize("kind", list(BUTTONS))
async def test_a_button_needs_the_right_of_its_command(chat, kind):
    setup, who, lacks = BUTTONS[kind]
    message_id, buttons = await setup(chat)
    assert buttons, kind
    await eventually(lambda: not chat.bot.outbox.pending(), what="the setup's messages sent")
    before = (len(chat.fake.calls_of("sendMessage")), len(chat.fake.calls_of("editMessageText")),
              dict(chat.bot.state.current), chat.bot.state.prefs_of(GROUP),
              dict(chat.bot.state.shown), chat.bot.state.langs.copy())
    for data in buttons.values():
        query = await chat.fake.user_taps(message_id, data, user=PEOPLE[who], chat_id=GROUP)
        toast = await chat.fake.wait_for("answerCallbackQuery",
                                         lambda p, q=query: p["callback_query_id"] == q)
        assert toast["text"] == REFUSED[lacks], (kind, data)
    # refused before the handler ran: nothing typed, pressed, said, edited or saved
    assert chat.sessions.typed == [] and chat.sessions.keys == []
    assert not chat.bot.outbox.pending()
    assert (len(chat.fake.calls_of("sendMessage")), len(chat.fake.calls_of("editMessageText")),
            dict(chat.bot.state.current), chat.bot.state.prefs_of(GROUP),
            dict(chat.bot.state.shown), chat.bot.state.langs.copy()) == before


async def test_the_model_picker_still_switches_for_an_admin(chat):
    message_id, buttons = await _model(chat)
    query = await chat.fake.user_taps(message_id, buttons["opus"], user=PEOPLE["admin"],
                                      chat_id=GROUP)
    toast = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == query)
    assert toast["text"] == "jim: switching to opus"
    assert [t[1] for t in chat.sessions.typed] == ["/model opus"]


def test_every_tap_handler_declares_its_right_and_a_commands_buttons_share_it():
    from aipager.bot import rights
    from aipager.bot.routers import commands, taps

    def every(router):  # the taps come by feature, each its own router
        yield from router.callback_query.handlers
        for sub in router.sub_routers:
            yield from every(sub)

    handlers = list(every(taps.make_router()))
    assert len(handlers) > 40
    assert all("rights" in h.flags for h in handlers), [h.callback.__name__ for h in handlers
                                                        if "rights" not in h.flags]
    by_name = {h.callback.__name__: h.flags["rights"] for h in handlers}
    for command, tap in (("model", "on_model_tap"), ("kill", "on_kill"), ("kill", "on_kill_yes"),
                         ("kill", "on_kill_no"), ("resume", "on_resume"),
                         ("compact", "on_compact"), ("session", "on_use"),
                         ("session", "on_pick_session"), ("stop", "on_stop")):
        assert by_name[tap] == rights.COMMANDS[command], (command, tap)
    said = {h.callback.__name__: h.flags.get("rights")
            for h in commands.make_router().message.handlers}
    assert said["on_model"] == said["on_kill"] == said["on_resume"] == "manage"
    assert said["on_compact"] == said["on_session_command"] == "prompt"


async def test_a_tap_handler_without_a_declared_right_is_held_to_the_strictest(chat):
    # a button added without its flag: an admin's, not every member's
    from aiogram import F

    from aipager.bot.callbacks import VoiceTap as Tap
    ran = []

    async def forgot(query, callback_answer):
        ran.append(query.from_user.id)
        callback_answer.text = "done"

    dp = chat.bot.dispatcher(object())
    router = dp.sub_routers[0]
    router.callback_query.register(forgot, Tap.filter(F.act == VoiceAct.CANCEL))
    from aiogram.types import Update
    for n, who in enumerate(("user", "admin")):
        raw = {"update_id": 9_000_000 + n, "callback_query": {
            "id": f"q{who}", "from": PEOPLE[who], "chat_instance": "1",
            "data": Tap(h=1, act=VoiceAct.CANCEL).pack(),
            "message": {"message_id": 1, "date": 0, "chat": {"id": GROUP, "type": "supergroup"}}}}
        await dp.feed_update(chat.bot.bot, Update.model_validate(raw))
    assert ran == [PEOPLE["admin"]["id"]]


# -- a damaged policy file ------------------------------------------------------------

NOTICE = "safety policy cannot be used"


async def test_a_damaged_policy_locks_members_out_and_the_owner_hears_it_once(chat):
    session = chat.start("jim")
    policy = paths.policy_user_file(chat.bot.env)
    os.makedirs(os.path.dirname(policy), exist_ok=True)
    with open(policy, "w", encoding="utf-8") as fh:
        # a token in the broken line: the chat must name the line, never quote it
        fh.write('{\n  "roles": {"user": {"may_prompt": true, "note": "sk-SECRET"\n')
    await _says(chat, "admin", "/jim check the logs")
    refused = await _reply(chat, "admin", lambda p: p["text"].startswith("🔒"))
    assert "safety policy cannot be read" in refused["text"] and "owner fixes it" in refused["text"]
    await _says(chat, "user", "/jim and again")
    await _reply(chat, "user", lambda p: p["text"].startswith("🔒") and p is not refused)
    notices = [t for t in chat.sent_texts() if NOTICE in t]
    assert len(notices) == 1, notices
    assert policy in notices[0] and "line" in notices[0] and "SECRET" not in notices[0]
    assert chat.sessions.typed == []
    # the owner still acts, and the timer's looks tell nothing new
    await _says(chat, "owner", "/jim fix the policy")
    await eventually(lambda: chat.sessions.typed)
    chat.bot.policy.check()
    assert len([t for t in chat.sent_texts() if NOTICE in t]) == 1
    # fixed: members have their rights back, and the chat hears it
    os.unlink(policy)
    await _says(chat, "admin", "/jim now it works")
    await eventually(lambda: len(chat.sessions.typed) == 2, what="the admin's message typed")
    assert chat.sessions.typed[1][1] == "now it works"
    await chat.fake.wait_for("sendMessage", lambda p: "usable again" in str(p["text"]))
    # broken again: told again, once
    with open(policy, "w", encoding="utf-8") as fh:
        fh.write("{")
    chat.bot.policy.check()
    chat.bot.policy.check()
    await eventually(lambda: len([t for t in chat.sent_texts() if NOTICE in t]) == 2)
    assert session
