"""The Telegram chat on the real path: the fake Bot API, the real daemon with its bot, the
real Claude Code TUI in dtach.

The owner "types" by injecting messages into the fake Bot API and "taps" by injecting
callback queries; the scenarios read back what the bot called (``kit.chat.Phone``), the
screen, ``aipager status --json`` and the requests the fake model saw.
"""

from __future__ import annotations

import os
import time

import pytest

from e2e.kit.chat import Phone, buttons, text_of
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

SESSION = "claude-e2e"
#: a step that takes 30 s (Claude Code 2.1.328 refuses a bare `sleep 30`: "Blocked: sleep 30
#: ... use run_in_background"), then leaves a file behind
LONG_STEP = "python3 -c 'import time; time.sleep(30)'; touch {}"
TUI_ARGS = ("--permission-mode", "default", "--allowedTools", "Bash,Write,Edit,Read,Agent")


def _ready(daemon, name: str = SESSION) -> None:
    """The daemon knows the session (SessionStart seen): a plain message goes there."""
    daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                        f"{name} ready", name=name)


def _answers(phone: Phone, label: str, text: str, snap: dict | None = None,
             reply_to: int | None = None) -> list[dict]:
    """The answer messages (``label`` on the first line, then Claude's text) containing ``text``;
    the card quotes the answer too, under its status header, and is left out."""
    sent = (phone.calls("sendMessage", snap) if reply_to is None
            else phone.replies_to(reply_to, snap))
    return [p for p in sent if p["text"].startswith(f"{label}\n") and text in p["text"]]


def _task_done(sess: dict) -> bool:
    return bool(sess.get("task") and sess["task"].get("ended_at")) and sess["state"] == "ready"


def test_a_message_becomes_a_prompt_with_a_card_and_one_threaded_answer(
        daemon, dtach_session, fake_anthropic, fake_telegram):
    phone = Phone(fake_telegram)
    # The step takes a moment, so the card is sent while it runs and edited after.
    fake_anthropic.script("E2E-CHAT", fa.bash("sleep 2; echo chat-row"),
                          fa.text("Answered from the chat."))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)

    msg = phone.say("E2E-CHAT run the step")

    (answer,) = phone.wait(lambda snap: _answers(phone, "e2e", "Answered from the chat.", snap,
                                                 reply_to=msg["message_id"]), 40, "the answer")
    assert answer["text"] == "e2e\nAnswered from the chat."
    tui.wait_shown("Answered from the chat.")
    # The prompt Claude Code got is the message, typed into the session.
    (first, *_rest) = fake_anthropic.requests_with("E2E-CHAT")
    assert "E2E-CHAT run the step" in fa.message_text(first.last_user())
    sess = daemon.wait_session(_task_done, 20, "the task done")
    assert sess["task"]["origin"] == "telegram", sess["task"]
    assert [a.get("msg_id") for a in sess["task"]["authors"]] == [msg["message_id"]], sess["task"]

    # The card: one message, sent then edited in place, ending as the done card with the row.
    done = phone.wait_message(lambda m: text_of(m).startswith("✅ e2e · done"), 20,
                              "the done card")
    assert "✓ Bash: sleep 2; echo chat-row" in text_of(done)
    assert not buttons(done), done
    snap = phone.snapshot()
    (sent,) = [p for p in phone.calls("sendMessage", snap)
               if p["text"].startswith(("⏳ e2e", "✅ e2e"))]
    assert sent["text"].startswith("⏳ e2e · working"), sent["text"]
    assert "⏹ Stop" in buttons({"reply_markup": sent.get("reply_markup")})
    assert int(sent["reply_parameters"]["message_id"]) == msg["message_id"]
    edits = [p for p in phone.calls("editMessageText", snap)
             if int(p["message_id"]) == done["message_id"]]
    assert edits and edits[-1]["text"] == text_of(done), phone.fake.call_log(40)
    # While the step ran, the card showed it running.
    assert any("⏳ Bash: sleep 2; echo chat-row" in p["text"] for p in [sent, *edits]), edits

    # Exactly one answer; 👀 then 👍 on the person's message.
    assert _answers(phone, "e2e", "Answered from the chat.", snap) == [answer]
    phone.wait(lambda s: phone.reactions(msg["message_id"], s)[-1:] == ["👍"], 10, "👍")
    assert phone.reactions(msg["message_id"]) == ["👀", "👍"]


def test_new_starts_a_session_that_answers_then_status_and_kill(daemon, fake_anthropic,
                                                                fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    name = "chatnew"
    fake_anthropic.script("E2E-NEW", fa.text("Hello from the new session."))

    msg = phone.say(f"/new {name} E2E-NEW say hello")

    started = phone.wait(lambda snap: next((p for p in phone.replies_to(msg["message_id"], snap)
                                            if f"{name} started" in p["text"]), None),
                         20, "the started line")
    assert claude_home.project in started["text"]
    phone.wait(lambda snap: _answers(phone, name, "Hello from the new session.", snap,
                                     reply_to=msg["message_id"]), 60, "the first message answered")
    sess = daemon.wait_session(_task_done, 20, "the new session's task done", name=f"claude-{name}")
    assert sess["task"]["prompt"] == "E2E-NEW say hello"
    assert sess["cwd"] == claude_home.project
    status = daemon.status()
    assert any(t["session"] == f"claude-{name}" and t["live"] for t in status["dtach_sessions"])

    phone.say("/status")
    screen = phone.wait(lambda snap: next((p for p in phone.calls("sendMessage", snap)
                                           if p["text"].startswith("Sessions:")), None),
                        15, "the status screen")
    assert f"✅ {name} · ready" in screen["text"], screen["text"]

    phone.say(f"/kill {name}")
    ask = phone.wait_message(lambda m: "🗑 Yes, end it" in buttons(m), 15, "the kill question")
    query = phone.tap(ask, "🗑 Yes, end it")
    phone.toast(query)
    # the outcome replaces the question (and its buttons)
    phone.wait(lambda snap: any(f"{name} ended by @owner" in str(p.get("text"))
                                for p in phone.calls("editMessageText", snap)),
               20, "the ended line")
    gone = daemon.wait_session(lambda s: s["state"] == "gone", 20, "the session gone",
                               name=f"claude-{name}")
    assert gone["gone_at"]
    assert not any(t["session"] == f"claude-{name}" and t["live"]
                   for t in daemon.status()["dtach_sessions"])
    assert len(_answers(phone, name, "Hello from the new session.")) == 1


def test_stop_interrupts_the_running_task(daemon, dtach_session, fake_anthropic, fake_telegram,
                                          claude_home):
    phone = Phone(fake_telegram)
    finished = os.path.join(claude_home.project, "ran-to-the-end")
    fake_anthropic.script("E2E-STOP", fa.bash(LONG_STEP.format(finished)),
                          fa.text("Ran to completion."))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)

    msg = phone.say("E2E-STOP run the long step")
    daemon.wait_session(lambda s: any(r["status"] == "running" for r in s["rows"]), 30,
                        "the long step running")
    phone.wait_message(lambda m: "Bash: python3 -c" in text_of(m), 15, "the card with the row")

    phone.say("/stop")

    tui.wait_shown("Interrupted", 20)
    # Claude Code fires no hook for an interrupted turn; the daemon sees it in the transcript.
    sess = daemon.wait_session(lambda s: s["state"] != "working", 20, "the task over")
    assert sess["state"] == "ready" and sess["task"]["ended_at"], sess
    assert sess["card"].startswith("⏹ e2e · interrupted"), sess["card"]
    card = phone.wait_message(lambda m: text_of(m).startswith("⏹ e2e · interrupted"), 15,
                              "the interrupted card")
    assert "Bash: python3 -c" in text_of(card) and not buttons(card), card
    assert not os.path.exists(finished)
    assert not tui.shows("Ran to completion.")
    # The model was never asked to go on after the step (one request: the prompt's).
    assert len(fake_anthropic.requests_with("E2E-STOP")) == 1
    assert not _answers(phone, "e2e", "Ran to completion.")
    assert phone.reactions(msg["message_id"])[:1] == ["👀"]


def _settled(phone: Phone, msg_id: int, label: str, answer: str, timeout: float = 40.0) -> dict:
    """Wait until the chat shows the end of the task ``msg_id`` started: the answer, the
    done card, 👍.  Returns the snapshot."""
    def done(snap: dict) -> dict | None:
        finished = (_answers(phone, label, answer, snap, reply_to=msg_id)
                    and any(text_of(m).startswith(f"✅ {label} · done")
                            for m in phone.messages(snap))
                    and phone.reactions(msg_id, snap)[-1:] == ["👍"])
        return snap if finished else None
    return phone.wait(done, timeout, "the answer, the done card and 👍")


def test_daemon_restarted_mid_task_delivers_the_answer_once(daemon, dtach_session,
                                                            fake_anthropic, fake_telegram):
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-CRESTART", fa.bash("sleep 3; echo slow-step"),
                          fa.bash("echo after-restart"), fa.text("Survived the restart."))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)
    msg = phone.say("E2E-CRESTART go")
    daemon.wait_session(lambda s: any(r["status"] == "running" for r in s["rows"]), 30,
                        "the slow step running")
    phone.wait_message(lambda m: "Bash: sleep 3; echo slow-step" in text_of(m), 15, "the card")

    daemon.stop()
    # While it is down the task finishes; the hooks spool what fired.
    tui.wait_shown("Survived the restart.", 30)
    daemon.start()

    snap = _settled(phone, msg["message_id"], "e2e", "Survived the restart.")
    sess = daemon.wait_session(_task_done, 20, "the task done after the restart")
    assert sess["delivered_answers"].count(f"p:{sess['task']['prompt_id']}") == 1
    assert len(_answers(phone, "e2e", "Survived the restart.", snap)) == 1
    # One card for the task, carried across the restart and edited to its end.
    cards = [m for m in phone.messages(snap) if text_of(m).startswith(("⏳ e2e", "✅ e2e"))]
    assert len(cards) == 1, [text_of(m) for m in cards]
    assert "✓ Bash: echo after-restart" in text_of(cards[0])
    assert phone.reactions(msg["message_id"], snap) == ["👀", "👍"]
    # A clean stop: no "running again after an unclean stop" line.
    assert not [t for t in phone.sent_texts(snap) if "unclean stop" in t]


def test_the_chat_hears_of_a_clean_stop_and_of_a_crash_before_what_follows(
        daemon, dtach_session, fake_anthropic, fake_telegram):
    """A clean stop (SIGTERM) mid-task is told once, naming the session that goes on working,
    and the next start edits that message to say it runs again; after a kill -9 mid-task,
    "running again after an unclean stop" comes before the answer the restart delivers."""
    phone = Phone(fake_telegram)
    daemon.stop()
    daemon.extra_env["AIPAGER_STOP_GRACE"] = "3"  # the suite's 0 sends nothing while stopping
    daemon.start()
    fake_anthropic.script("E2E-CSTOP", fa.bash("sleep 3; echo before-the-stop"),
                          fa.text("Answer after the clean stop."))
    fake_anthropic.script("E2E-CCRASH", fa.bash("sleep 3; echo before-the-crash"),
                          fa.text("Answer after the crash."))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)

    msg = phone.say("E2E-CSTOP go")
    phone.wait_message(lambda m: "Bash: sleep 3; echo before-the-stop" in text_of(m), 30,
                       "the card")
    daemon.stop()
    stopped = [m for m in phone.messages() if text_of(m).startswith("⏸ aipager stopped")]
    assert len(stopped) == 1, [text_of(m) for m in phone.messages()]
    assert "⏳ Still working there: e2e." in text_of(stopped[0])
    tui.wait_shown("Answer after the clean stop.", 30)
    daemon.start()
    _settled(phone, msg["message_id"], "e2e", "Answer after the clean stop.")
    phone.wait(lambda snap: "▶️ running again since" in text_of(
        phone.message(stopped[0]["message_id"]) or {}), 15, "the stop notice edited")
    assert len([m for m in phone.messages() if "aipager stopped" in text_of(m)]) == 1

    daemon.wait_session(_task_done, 20, "the first task done")
    crash = phone.say("E2E-CCRASH go")
    phone.wait_message(lambda m: "Bash: sleep 3; echo before-the-crash" in text_of(m), 30,
                       "the card")
    before = len(phone.calls("sendMessage"))
    daemon.proc.kill()
    daemon.proc.wait(10)
    tui.wait_shown("Answer after the crash.", 30)  # the hooks spool it meanwhile
    daemon.start()
    snap = _settled(phone, crash["message_id"], "e2e", "Answer after the crash.")
    texts = [p["text"] for p in phone.calls("sendMessage", snap)[before:]]
    restarted = [i for i, t in enumerate(texts) if "running again after an unclean stop" in t]
    answer = [i for i, t in enumerate(texts) if t.startswith("e2e\nAnswer after the crash.")]
    assert len(restarted) == 1 and len(answer) == 1 and restarted[0] < answer[0], texts
    assert not [t for t in texts if "aipager stopped" in t]  # a crash says no clean stop


def test_telegram_down_mid_task_the_chat_converges(daemon, dtach_session, fake_anthropic,
                                                   fake_telegram):
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-OUTAGE", fa.bash("sleep 2; echo in-the-dark"),
                          fa.bash("echo still-dark"), fa.text("Answer after the outage."))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)
    msg = phone.say("E2E-OUTAGE go")
    phone.wait_message(lambda m: "Bash: sleep 2; echo in-the-dark" in text_of(m), 30, "the card")

    fake_telegram.set_outage(True)
    try:
        # The task ends while Telegram is down: the bot's calls fail (502).
        tui.wait_shown("Answer after the outage.", 30)
        daemon.wait_session(_task_done, 20, "the task done")
        phone.wait(lambda snap: ("sendMessage", 502) in phone.failed(snap)
                   or ("editMessageText", 502) in phone.failed(snap), 15, "a refused send")
        time.sleep(6)  # ~10 s of outage in all
    finally:
        fake_telegram.set_outage(False)

    snap = _settled(phone, msg["message_id"], "e2e", "Answer after the outage.", 60)
    assert len(_answers(phone, "e2e", "Answer after the outage.", snap)) == 1
    cards = [m for m in phone.messages(snap) if text_of(m).startswith(("⏳ e2e", "✅ e2e"))]
    assert len(cards) == 1, [text_of(m) for m in cards]
    final = text_of(cards[0])
    assert final.startswith("✅ e2e · done"), final
    assert "✓ Bash: echo still-dark" in final
    # Nothing said twice: every message the bot sent is distinct.
    texts = phone.sent_texts(snap)
    assert len(texts) == len(set(texts)), texts
    assert phone.reactions(msg["message_id"], snap) == ["👀", "👍"]


def test_model_from_the_chat_is_that_sessions_alone(daemon, dtach_session, fake_anthropic,
                                                    fake_telegram, claude_home):
    """Claude Code 2.1.328 saves the model ``/model`` picks in ~/.claude/settings.json, which
    would make it every later session's; from the chat it stays with the session it names."""
    import json

    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-MODELCHAT", fa.text("Some context first."))
    fake_anthropic.script("E2E-MODELAFTER", fa.text("Still on the switched model."))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)
    phone.say("E2E-MODELCHAT hello")
    tui.wait_shown("Some context first.", 30)
    daemon.wait_session(_task_done, 20, "the first task done")

    phone.say("/model sonnet")

    tui.wait_shown("Set model to Sonnet", 20)

    def setting() -> object:
        with open(claude_home.settings_path, encoding="utf-8") as fh:
            return json.load(fh).get("model", "(none)")

    phone.wait(lambda _s: setting() == "(none)", 15, "Claude Code's own setting put back")
    phone.say("E2E-MODELAFTER again")
    tui.wait_shown("Still on the switched model.", 30)
    models = [r.body.get("model") for r in fake_anthropic.requests_with("E2E-MODELAFTER")]
    assert models and all("sonnet" in str(m) for m in models), models
    assert setting() == "(none)"
