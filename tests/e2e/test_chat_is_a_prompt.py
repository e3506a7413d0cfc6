"""A chat message is a prompt, never a keystroke, on the real Claude Code TUI (the fake Bot API,
the real daemon and hook): rights are never borrowed, long messages arrive whole, a crash
mid-typing is cleared, never glued.  The member's keystroke attacks are the corpus
(``test_attack_corpus.py``)."""

from __future__ import annotations

import json
import os

import pytest

from aipager.proto import paths
from e2e.kit.chat import Phone
from e2e.kit.daemon import OWNER_ID, USER_ID
from e2e.test_team import GROUP, GUEST, TUI_ARGS, _finished, _ready, team  # noqa: F401 - fixture
from fakes import anthropic as fa
from fakes.telegram_api import OWNER

pytestmark = pytest.mark.e2e


def _user_prompts(fake_anthropic) -> str:
    """Everything the model was sent as the person's words."""
    return "\n".join(json.dumps(r.body.get("messages"), ensure_ascii=False)
                     for r in fake_anthropic.requests)


def test_a_crash_left_note_lends_no_rights(
        team, dtach_session, fake_anthropic, fake_telegram, claude_home):  # noqa: F811 - test_team's fixture
    """The owner's note for "E2E-BORROW deploy" was left behind by a crash; a member's message
    that contains its text runs with the member's rights, and the audit names the member."""
    from aipager.policy import notes

    made = os.path.join(claude_home.project, "made-with-borrowed-rights")
    fake_anthropic.script("E2E-BORROW", fa.bash(f"touch {made}"), fa.text("Borrow over."))
    dtach_session(*TUI_ARGS)
    _ready(team)
    notes.write_note(claude_home.aipager_env(), claude_home.session, msg_id=1, chat_id=GROUP,
                     author_user_id=OWNER_ID, author_label="owner", role="owner",
                     text="E2E-BORROW deploy")

    fake_telegram.say("/e2e please E2E-BORROW deploy now", user=GUEST, chat_id=GROUP)

    sess = team.wait_session(_finished(1), 40, "the member's task finished")
    assert sess["task"]["blocked"], sess["task"]
    assert [a["user_id"] for a in sess["task"]["authors"]] == [USER_ID]
    assert not os.path.exists(made)
    prompts = [r for r in claude_home.audit() if r.get("action") == "chat_prompt"]
    assert [r["who_id"] for r in prompts] == [USER_ID]


def test_a_long_message_arrives_whole_and_is_answered_as_a_reply(
        team, dtach_session, fake_anthropic, fake_telegram):  # noqa: F811 - test_team's fixture
    """4,204 characters in 110 lines (a pasted log): typed, it arrived split or with lines
    missing; pasted, the model gets every byte and the answer replies to the message."""
    phone = Phone(fake_telegram, GROUP)
    fake_anthropic.script("E2E-LONG", fa.text("Long log read."))
    dtach_session(*TUI_ARGS)
    _ready(team)
    lines = [f"log {i:03d} GET /api/items/{i} served in {i % 17} ms" for i in range(110)]
    body = "\n".join(lines)
    message = fake_telegram.say(f"/e2e E2E-LONG what is slow here?\n{body}", user=OWNER,
                                chat_id=GROUP)
    answer = phone.wait_message(lambda m: "Long log read." in m.get("text", ""), 60,
                                "the answer")
    assert answer.get("reply_to_message", {}).get("message_id") == message["message_id"]
    request = fake_anthropic.requests_with("E2E-LONG")[0]
    assert body in fa.message_text(request.last_user())
    phone.wait(lambda snap: "👍" in phone.reactions(message["message_id"], snap), 20,
               "👍 on the message Claude took")


def test_a_message_cut_off_by_a_crash_is_cleared_not_glued(daemon, dtach_session,
                                                           fake_anthropic, fake_telegram,
                                                           claude_home):
    """The daemon is killed between pasting a message and pressing Enter: the text stays in
    Claude Code's input box.  The next start empties the box, deletes the message's note and
    says so on the message; the next message arrives alone, not glued to the old text."""
    from aipager.policy import notes
    from aipager.proto import fsio

    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-NEXT", fa.text("Next answered."))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)
    first = fake_telegram.say("hello before the crash")
    phone.wait(lambda snap: "👍" in phone.reactions(first["message_id"], snap), 40, "taken")

    daemon.proc.kill()
    daemon.proc.wait(10)
    # what the killed daemon had done: the note, the mark, the paste without its Enter
    env = claude_home.aipager_env()
    note = notes.write_note(env, claude_home.session, msg_id=first["message_id"],
                            chat_id=OWNER["id"], author_user_id=OWNER_ID, author_label="owner",
                            role="owner", text="E2E-HALF typed when the daemon died")
    fsio.write_json_atomic(paths.typing_mark(env, claude_home.session),
                            {"note": note, "chat_id": OWNER["id"], "msg_id": first["message_id"]})
    tui.push(b"\x1b[200~E2E-HALF typed when the daemon died\x1b[201~")
    tui.wait_shown("E2E-HALF typed when the daemon died")
    daemon.start()

    phone.wait(lambda snap: any("cut this message off" in t for t in phone.sent_texts(snap)),
               30, "the cut-off message reported")
    assert notes.list_notes(env, claude_home.session) == []
    fake_telegram.say("E2E-NEXT after the restart")
    phone.wait(lambda snap: any("Next answered." in t for t in phone.sent_texts(snap)), 60,
               "the next answer")
    prompt = fa.message_text(fake_anthropic.requests_with("E2E-NEXT")[0].last_user())
    assert "E2E-HALF" not in prompt
    assert not fake_anthropic.requests_with("E2E-HALF")


def test_a_message_whose_daemon_died_before_its_enter_is_typed_once_after_the_restart(
        daemon, dtach_session, fake_anthropic, fake_telegram):
    """The real daemon kills itself (``AIPAGER_TEST_CRASH_AT``) once a phone message is pasted
    into the real Claude Code's input box, before its Enter: the next start empties the box
    and types the message again; Claude is asked once, the answer arrives once, and nobody is
    told the message was cut off."""
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-ONCE", fa.text("Once answered."))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)
    daemon.proc.terminate()
    daemon.proc.wait(20)
    daemon.extra_env["AIPAGER_TEST_CRASH_AT"] = "typing.pasted"
    daemon.start()
    _ready(daemon)
    fake_telegram.say("E2E-ONCE pasted when the daemon died")
    assert daemon.proc.wait(30) == -9  # SIGKILL, at the crash point
    tui.wait_shown("E2E-ONCE pasted when the daemon died")  # in the box, without its Enter
    del daemon.extra_env["AIPAGER_TEST_CRASH_AT"]
    daemon.start()
    phone.wait(lambda snap: any("Once answered." in t for t in phone.sent_texts(snap)), 60,
               "the answer")
    asked = fake_anthropic.requests_with("E2E-ONCE")
    assert len({fa.message_text(r.last_user()) for r in asked}) == 1
    assert fa.message_text(asked[0].last_user()).count("E2E-ONCE") == 1  # not glued to itself
    sent = phone.sent_texts()
    assert sum("Once answered." in t for t in sent) == 1
    assert not any("cut this message off" in t for t in sent)


def test_claude_sends_no_system_secret_and_a_members_task_nothing_from_outside(
        team, dtach_session, fake_anthropic, fake_telegram, claude_home):  # noqa: F811 - test_team's fixture
    """SendUserFile of /etc/shadow is refused for every task, the owner's too (the daemon may
    run as root); a member's task sends only files from the session's folder."""
    phone = Phone(fake_telegram, GROUP)
    claude_home.extra_env["CLAUDE_CODE_ATTACHMENTS_BY_PATH"] = "1"
    inside = os.path.join(claude_home.project, "report.txt")
    with open(inside, "w") as fh:
        fh.write("the report\n")
    fake_anthropic.script("E2E-SHADOW", fa.tool("SendUserFile", {"files": ["/etc/shadow"],
                                                                 "status": "normal"}),
                          fa.text("Shadow over."))
    fake_anthropic.script("E2E-OUTSIDE",
                          fa.tool("SendUserFile", {"files": ["/etc/hostname"], "status": "normal"}),
                          fa.tool("SendUserFile", {"files": [inside], "status": "normal"}),
                          fa.text("Outside over."))
    dtach_session("--permission-mode", "default", "--allowedTools", "Write,Read,SendUserFile")
    _ready(team)

    fake_telegram.say("/e2e E2E-SHADOW send the password file", user=OWNER, chat_id=GROUP)
    phone.wait(lambda snap: any("Shadow over." in t for t in phone.sent_texts(snap)), 60,
               "the owner's answer")
    team.wait_session(_finished(1), 30, "the owner's task finished")
    fake_telegram.say("/e2e E2E-OUTSIDE send the host name", user=GUEST, chat_id=GROUP)
    phone.wait(lambda snap: any("Outside over." in t for t in phone.sent_texts(snap)), 60,
               "the member's answer")
    phone.wait(lambda snap: len(snap["uploads"]) >= 1, 20, "the report uploaded")

    uploads = phone.snapshot()["uploads"]
    assert [u["filename"] for u in uploads] == ["report.txt"], uploads
    errors = [str(b.get("content")) for key in ("E2E-SHADOW", "E2E-OUTSIDE")
              for r in fake_anthropic.requests_with(key) for b in r.tool_results()
              if b.get("is_error")]
    assert any("/etc/shadow" in e for e in errors), errors
    assert any("/etc/hostname" in e and "outside" in e for e in errors), errors


def test_a_stranger_flooding_join_codes_does_not_hold_the_owners_answer_back(
        team, dtach_session, fake_anthropic, fake_telegram, claude_home):  # noqa: F811 - test_team's fixture
    """200 wrong /join codes from a stranger while the owner's task answers: before, each got
    an answer and group posts go out at 20 a minute, so the owner waited minutes; now the
    stranger gets at most three, after the team's, and the rest is silence (audited)."""
    phone = Phone(fake_telegram, GROUP)
    stranger = {"id": 31337, "is_bot": False, "first_name": "Mallory", "username": "mallory"}
    fake_anthropic.script("E2E-FLOOD", fa.text("Flood answer."))
    dtach_session(*TUI_ARGS)
    _ready(team)
    fake_telegram.say("/e2e E2E-FLOOD hello", user=OWNER, chat_id=GROUP)
    for i in range(200):
        fake_telegram.say(f"/join wrong{i:03d}", user=stranger, chat_id=GROUP)
    # a group's pacing allows the answer within seconds; 200 answers would take 10 minutes
    phone.wait(lambda snap: any("Flood answer." in t for t in phone.sent_texts(snap)), 60,
               "the owner's answer")
    team.wait_session(_finished(1), 30, "the owner's task finished")
    to_stranger = [m for m in phone.messages()
                   if m.get("reply_to_message", {}).get("from", {}).get("id") == stranger["id"]]
    assert 1 <= len(to_stranger) <= 3, [m.get("text") for m in to_stranger]
    assert all("invitation code is not valid" in m.get("text", "") for m in to_stranger)
    records = claude_home.audit()
    assert {r.get("who_id") for r in records if r.get("action", "").startswith("join_")} \
        == {stranger["id"]}
    assert any(r.get("action") == "join_silenced" for r in records)


def test_text_of_several_lines_left_in_the_box_is_never_glued_on(daemon, dtach_session,
                                                                 fake_anthropic, fake_telegram):
    """Three lines left in Claude Code's input box (a draft, a paste a crash cut off): Ctrl-U
    alone deletes only the last line.  The next chat message arrives alone, with nothing of
    them, and is taken (👍)."""
    from aipager import dtach

    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-ALONE", fa.text("Alone answered."))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)
    tui.push(dtach.PASTE_START + b"Via aipager, from x (user):\nE2E-LEFT two\nE2E-LEFT three"
             + dtach.PASTE_END)
    tui.wait_shown("E2E-LEFT three")
    msg = fake_telegram.say("E2E-ALONE hello")
    phone.wait(lambda snap: any("Alone answered." in t for t in phone.sent_texts(snap)), 60,
               "the answer")
    prompt = fa.message_text(fake_anthropic.requests_with("E2E-ALONE")[0].last_user())
    assert "E2E-LEFT" not in prompt and prompt.count("Via aipager") == 1
    assert "👍" in phone.reactions(msg["message_id"])


@pytest.mark.parametrize("point", ["typing.entered", "chat.eyes"])
def test_a_message_whose_daemon_died_after_its_enter_is_answered_as_its_own_reply(
        daemon, dtach_session, fake_anthropic, fake_telegram, point):
    """The daemon is killed right after a phone message's Enter, or right after its 👀
    (Claude Code takes it while no daemon runs: its hooks spool).  The next start gives that
    message its 👍 and its answer as a reply to it, not to the message before, and it does
    not keep 👀."""
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-BEFORE", fa.text("Before answered."))
    fake_anthropic.script("E2E-KILLED", fa.text("Killed answered."))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)
    before = phone.say("E2E-BEFORE first")
    phone.wait(lambda snap: phone.replies_to(before["message_id"], snap), 60, "the first answer")
    daemon.proc.terminate()
    daemon.proc.wait(20)
    daemon.extra_env["AIPAGER_TEST_CRASH_AT"] = point
    daemon.start()
    _ready(daemon)
    killed = phone.say("E2E-KILLED entered when the daemon died")
    assert daemon.proc.wait(30) == -9  # SIGKILL, at the crash point
    if point == "chat.eyes":
        assert phone.reactions(killed["message_id"]) == ["👀"]
    tui.wait_shown("Killed answered.")  # Claude Code went on without a daemon
    del daemon.extra_env["AIPAGER_TEST_CRASH_AT"]
    daemon.start()
    replies = phone.wait(lambda snap: [p for p in phone.replies_to(killed["message_id"], snap)
                                       if "Killed answered." in str(p["text"])], 60,
                         "the answer as a reply to the killed message")
    assert len(replies) == 1
    assert not [p for p in phone.replies_to(before["message_id"])
                if "Killed answered." in str(p["text"])]
    phone.wait(lambda snap: phone.reactions(killed["message_id"], snap)[-1:] == ["👍"], 20,
               "👍 on the killed message")
    assert sum("Killed answered." in t for t in phone.sent_texts()) == 1
