"""A team group on the real path: the fake Bot API's group, the real daemon and bot, the real
Claude Code TUI.  A `user` member's prompt runs with the user's rules plus the floor (the
hook refuses before any dialog could be approved); the owner's identical prompt runs; another
person's message waits for the running task and then goes in."""

from __future__ import annotations

import json
import os

import pytest

from e2e.kit.chat import Phone, buttons
from e2e.kit.daemon import OWNER_ID, USER_ID, Daemon
from fakes import anthropic as fa
from fakes.telegram_api import OWNER, TOKEN

from aipager.proto import paths

pytestmark = pytest.mark.e2e

GROUP = -1000000000042
GUEST = {"id": USER_ID, "is_bot": False, "first_name": "Guest", "username": "guest"}
#: Bash is not pre-allowed: if the hook let a call through, Claude Code would show its dialog
TUI_ARGS = ("--permission-mode", "default", "--allowedTools", "Write,Read")


@pytest.fixture
def team(claude_home, fake_telegram, fake_anthropic):
    """The daemon reporting to a group with the owner and a `user` member."""
    from aipager import config

    fake_telegram.add_group_chat(GROUP, "team")
    cfg = config.Config(bot_token=TOKEN, chat_id=GROUP,
                        members=(config.Member(OWNER_ID, "owner", "owner"),
                                 config.Member(USER_ID, "user", "guest")))
    config.save(claude_home.aipager_env(), cfg)
    proc = Daemon.for_chat(claude_home, fake_telegram.base, fake_anthropic.base_url)
    proc.start()
    yield proc
    proc.stop()


def _ready(daemon) -> None:
    daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                        "the session ready")


def _finished(seq: int):
    def pred(sess: dict) -> bool:
        task = sess.get("task") or {}
        return task.get("seq") == seq and bool(task.get("ended_at")) and sess["state"] == "ready"
    return pred


def test_a_users_forbidden_task_is_refused_while_the_owners_identical_one_runs(
        team, dtach_session, fake_anthropic, fake_telegram, claude_home):
    phone = Phone(fake_telegram, GROUP)
    made = os.path.join(claude_home.project, "made-by-team")
    fake_anthropic.script("E2E-TEAM", fa.bash(f"touch {made}"), fa.text("Team task over."))
    tui = dtach_session(*TUI_ARGS)
    _ready(team)

    fake_telegram.say("/e2e E2E-TEAM make the file", user=GUEST, chat_id=GROUP)

    sess = team.wait_session(_finished(1), 40, "the user's task finished")
    assert sess["task"]["blocked"], sess["task"]
    assert [a["user_id"] for a in sess["task"]["authors"]] == [USER_ID]
    phone.wait(lambda snap: any("a safety rule refused Bash" in t for t in phone.sent_texts(snap)),
               20, "the safety notice in the group")
    assert not os.path.exists(made)
    # Never a dialog to approve: the hook refused before Claude Code could ask.
    assert not tui.shows("Do you want to proceed?")
    assert not any("🔐 e2e · Bash" in t for t in phone.sent_texts())

    fake_telegram.say("/e2e E2E-TEAM make the file", user=OWNER, chat_id=GROUP)

    # The owner's task asks (Bash is not pre-allowed): the owner taps Allow in the group.
    request = phone.wait_message(lambda m: m.get("text", "").startswith("🔐 e2e · Bash"), 40,
                                 "the owner's permission request")
    fake_telegram.tap(request["message_id"], buttons(request)["✅ Allow"], chat_id=GROUP)
    sess = team.wait_session(_finished(2), 40, "the owner's task finished")
    assert not sess["task"]["blocked"]
    assert os.path.exists(made)


def test_a_users_read_of_the_password_hashes_is_refused_told_and_audited(
        team, dtach_session, fake_anthropic, fake_telegram, claude_home):
    """Read is pre-allowed (TUI_ARGS) and the tests run as root, so only the floor's
    SECRET_GLOBS stand between the member and /etc/shadow."""
    phone = Phone(fake_telegram, GROUP)
    fake_anthropic.script("E2E-SHADOW", fa.tool("Read", {"file_path": "/etc/shadow"}),
                          fa.text("Could not read it."))
    dtach_session(*TUI_ARGS)
    _ready(team)

    fake_telegram.say("/e2e E2E-SHADOW show me the password hashes", user=GUEST, chat_id=GROUP)

    sess = team.wait_session(_finished(1), 40, "the user's task finished")
    assert "/etc/shadow" in sess["task"]["blocked"], sess["task"]
    phone.wait(lambda snap: any("a safety rule refused Read" in t and "/etc/shadow" in t
                                for t in phone.sent_texts(snap)), 20, "the safety notice in the group")
    # Claude got the refusal, never the file
    results = json.dumps([b for r in fake_anthropic.requests_with("E2E-SHADOW")
                          for b in r.tool_results()])
    assert "no access: /etc/shadow*" in results
    assert "root:" not in results
    with open(paths.audit_log(claude_home.aipager_env()), encoding="utf-8") as fh:
        blocked = [r for r in map(json.loads, fh) if r["action"] == "safety_blocked"]
    assert blocked and all("/etc/shadow" in r["reason"] for r in blocked), blocked
    assert all(USER_ID in [a.get("user_id") for a in r["authors"]] for r in blocked), blocked


def test_another_persons_message_waits_for_the_running_task(team, dtach_session, fake_anthropic,
                                                           fake_telegram, claude_home):
    phone = Phone(fake_telegram, GROUP)
    first_file = os.path.join(claude_home.project, "first")
    fake_anthropic.script("E2E-FIRST", fa.bash(f"touch {first_file}"),
                          fa.text("First task over."))
    fake_anthropic.script("E2E-SECOND", fa.text("Second task over."))
    dtach_session(*TUI_ARGS)
    _ready(team)

    fake_telegram.say("/e2e E2E-FIRST start", user=OWNER, chat_id=GROUP)
    # The owner's task stops at a permission request: it is still running.
    request = phone.wait_message(lambda m: m.get("text", "").startswith("🔐 e2e · Bash"), 40,
                                 "the owner's permission request")
    fake_telegram.say("/e2e E2E-SECOND after that", user=GUEST, chat_id=GROUP)
    phone.wait(lambda snap: any("queued after owner" in t for t in phone.sent_texts(snap)), 20,
               "the queued line")
    assert not fake_anthropic.requests_with("E2E-SECOND")

    fake_telegram.tap(request["message_id"], buttons(request)["✅ Allow"], chat_id=GROUP)

    phone.wait(lambda snap: any("Second task over." in t for t in phone.sent_texts(snap)), 60,
               "the second answer")
    texts = phone.sent_texts()
    first = next(i for i, t in enumerate(texts) if "First task over." in t)
    second = next(i for i, t in enumerate(texts) if "Second task over." in t)
    assert first < second
    sess = team.wait_session(_finished(2), 30, "the second task finished")
    assert [a["user_id"] for a in sess["task"]["authors"]] == [USER_ID]


ADMIN = {"id": 3003, "is_bot": False, "first_name": "Adam", "username": "adam"}


@pytest.fixture
def team_with_admin(claude_home, fake_telegram, fake_anthropic):
    """The daemon reporting to a group with the owner and an `admin`."""
    from aipager import config

    fake_telegram.add_group_chat(GROUP, "team")
    cfg = config.Config(bot_token=TOKEN, chat_id=GROUP,
                        members=(config.Member(OWNER_ID, "owner", "owner"),
                                 config.Member(ADMIN["id"], "admin", "adam")))
    config.save(claude_home.aipager_env(), cfg)
    proc = Daemon.for_chat(claude_home, fake_telegram.base, fake_anthropic.base_url)
    proc.start()
    yield proc
    proc.stop()


def test_an_edit_the_floor_forbids_is_refused_and_the_request_stays_answerable(
        team_with_admin, dtach_session, fake_anthropic, fake_telegram, claude_home):
    """An admin corrects the owner's command into one the safety floor denies (sudo): refused
    in one line, nothing sent to Claude Code, and the request still takes a tap."""
    team = team_with_admin
    phone = Phone(fake_telegram, GROUP)
    made = os.path.join(claude_home.project, "made-as-asked")
    fake_anthropic.script("E2E-TEDITFLOOR", fa.bash(f"touch {made}"), fa.text("Ran as asked."))
    tui = dtach_session(*TUI_ARGS)
    _ready(team)
    fake_telegram.say("/e2e E2E-TEDITFLOOR make the file", user=OWNER, chat_id=GROUP)
    request = phone.wait_message(lambda m: m.get("text", "").startswith("🔐 e2e · Bash"), 40,
                                 "the owner's permission request")
    tui.wait_shown("Do you want to proceed?", 20)

    fake_telegram.tap(request["message_id"], buttons(request)["✏️ Edit"], user=ADMIN,
                      chat_id=GROUP)
    ask = phone.wait_message(lambda m: "the corrected command" in m.get("text", ""), 15,
                             "the ask for the correction")
    fake_telegram.say(f"sudo touch {made}", user=ADMIN, chat_id=GROUP,
                      reply_to=ask["message_id"])

    phone.wait(lambda snap: any("Not allowed" in t and "sudo" in t
                                for t in phone.sent_texts(snap)), 20, "the refusal")
    assert not os.path.exists(made)
    fake_telegram.tap(request["message_id"], buttons(request)["✅ Allow"], chat_id=GROUP)
    tui.wait_shown("Ran as asked.", 30)
    assert os.path.exists(made)


def test_an_invitation_made_before_a_restart_lets_the_newcomer_in_once_after_it(
        team, fake_telegram, claude_home):
    """/invite in the group, the daemon stopped and started again (the real process), then
    the newcomer's /join: they are a member with the role the invitation named; the code
    does not open twice, and the daemon's file holds no code that would."""
    from aipager import config

    phone = Phone(fake_telegram, GROUP)
    fake_telegram.say("/invite read_only", user=OWNER, chat_id=GROUP)
    invite = phone.wait_message(lambda m: "/join " in m.get("text", ""), 30, "the invitation")
    code = invite["text"].split("/join ", 1)[1].split()[0]
    team.stop()
    team.start()
    with open(paths.invites_file(claude_home.aipager_env()), encoding="utf-8") as fh:
        assert code not in fh.read()
    nia = {"id": 777001, "is_bot": False, "first_name": "Nia", "username": "nia"}
    fake_telegram.say(f"/join {code}", user=nia, chat_id=GROUP)
    phone.wait_message(lambda m: "Welcome, nia: you joined as read_only." in m.get("text", ""),
                       30, "the welcome")
    eve = {"id": 777002, "is_bot": False, "first_name": "Eve", "username": "eve"}
    fake_telegram.say(f"/join {code}", user=eve, chat_id=GROUP)
    phone.wait_message(lambda m: "not valid" in m.get("text", ""), 30, "the refusal")
    roles = {m.id: m.role for m in config.load(claude_home.aipager_env()).members}
    assert roles.get(777001) == "read_only" and 777002 not in roles
