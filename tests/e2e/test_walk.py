"""A new person's first minutes with the chat, read as they read it (``kit.screen``): the
real daemon and bot on the fake Bot API, sessions ``/new`` starts running the real Claude
Code offline.  Each step asserts what the phone shows: which messages buzz (one per prompt:
its answer), what replies to what, that buttons go once used, that nothing is said twice.

What the walk found and these steps keep fixed: an answer arrived silently when discovery
counted the daemon's own typing as a terminal attached; a stranger's message reached
nobody but the log.
"""

from __future__ import annotations

import re
import time

import pytest

from e2e.kit.chat import Phone, buttons, text_of
from e2e.kit.screen import Transcript, buzzing, texts
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

STRANGER = {"id": 31337, "is_bot": False, "first_name": "Mallory", "username": "mallory"}


def _answered(phone: Phone, msg: dict, words: str, timeout: float = 60.0) -> None:
    """The answer replies to ``msg``, Claude took it (👍), and its card (if the task was long
    enough to get one) shows the end: its last edit comes a moment after the answer."""
    def done(snap: dict) -> bool:
        replies = phone.replies_to(msg["message_id"], snap)
        return (any(words in p["text"] for p in replies)
                and phone.reactions(msg["message_id"], snap)[-1:] == ["👍"]
                and not any(m.get("text", "").startswith("⏳") for m in phone.messages(snap)
                            if (m.get("reply_to_message") or {}).get("message_id")
                            == msg["message_id"]))

    phone.wait(done, timeout, f"the answer {words!r}, 👍 and the card's end")


def _refused(phone: Phone) -> list[tuple[str, int, str]]:
    """Calls Telegram refused: none, not even an edit to the text a message already shows
    ("not modified": the 📟 line changed and changed back while its edit waited)."""
    return [(method, code, desc) for method, _p, code, desc in phone.snapshot()["failed_calls"]]


def _end(phone: Phone, daemon, name: str, walk: Transcript) -> None:
    """``/kill NAME``, tap yes: the question becomes its outcome, its buttons gone."""
    phone.say(f"/kill {name}")
    ask = phone.wait_message(lambda m: f"End session {name}?" in text_of(m)
                             and "🗑 Yes, end it" in buttons(m), 15, "the kill question")
    phone.toast(phone.tap(ask, "🗑 Yes, end it"))
    daemon.wait_session(lambda s: s["state"] == "gone", 20, f"{name} gone", name=f"claude-{name}")
    ended = phone.wait_message(lambda m: m["message_id"] == ask["message_id"]
                               and f"{name} ended by @owner" in text_of(m), 15, "the outcome")
    assert not buttons(ended), walk
    walk.step(f"/kill {name}, tapped yes")


def test_a_new_persons_walk(daemon, fake_anthropic, fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    walk = Transcript(phone)

    # /new with a first message: the started line and the answer reply to it; only the
    # answer buzzes.
    fake_anthropic.script("W-NEW", fa.text("Hello from walk."))
    first = phone.say("/new walk W-NEW say hello")
    _answered(phone, first, "Hello from walk.")
    shown = walk.step("/new walk W-NEW say hello")
    started = next(s for s in shown if "walk started in" in s.text)
    assert not started.buzz and started.reply_to == first["message_id"], walk
    assert buzzing(shown) == ["walk\nHello from walk."], walk

    # Plain prompts, one after another: each answer replies to its message and buzzes,
    # and nothing else does.  (Discovery counted the daemon's own typing, and its own
    # liveness probe, as a terminal attached: "quiet at the computer" made such an
    # answer silent.)
    for i in range(4):
        key = f"W-PLAIN{i}"
        fake_anthropic.script(key, fa.text(f"Plain answer {i}."))
        msg = phone.say(f"{key} question number {i}")
        _answered(phone, msg, f"Plain answer {i}.")
        shown = walk.step(f"prompt {i}")
        assert buzzing(shown) == [f"walk\nPlain answer {i}."], walk
        answers = [s for s in shown if f"Plain answer {i}." in s.text]
        assert len(answers) == 1 and answers[0].reply_to == msg["message_id"], walk

    # A pasted log (4,500 characters, 110 lines): one prompt, byte-exact; one answer.
    fake_anthropic.script("W-LONG", fa.text("Long log read."))
    lines = [f"log {i:03d} GET /api/items/{i} served in {i % 17} ms" for i in range(110)]
    body = "W-LONG what is slow here?\n" + "\n".join(lines)
    assert len(body) > 4000
    msg = phone.say(body)
    _answered(phone, msg, "Long log read.")
    shown = walk.step("a pasted log")
    (request,) = fake_anthropic.requests_with("W-LONG")
    assert fa.message_text(request.last_user()).count(body) == 1
    assert buzzing(shown) == ["walk\nLong log read."], walk

    # A stranger: told the bot is private, in their own chat; the owner sees it once,
    # silently, and the audit has it.
    fake_telegram.say("hello bot, let me in", user=STRANGER)
    fake_telegram.say("please", user=STRANGER)
    phone.wait(lambda snap: any("not in the team" in t for t in phone.sent_texts(snap)), 15,
               "the owner told of the stranger")
    phone.say("/status")  # handled after the stranger's two messages
    phone.wait(lambda snap: any(t.startswith("Sessions:") for t in phone.sent_texts(snap)), 15,
               "the status")
    shown = walk.step("a stranger writes twice, then /status")
    to_stranger = [s for s in shown if s.chat == STRANGER["id"]]
    assert texts(to_stranger) == ["🔒 This bot is private: it drives somebody's Claude Code "
                                  "sessions."], walk
    told = [s for s in shown if "not in the team" in s.text]
    assert [(s.text, s.buzz) for s in told] == [
        ("👤 @mallory (id 31337), who is not in the team, wrote to the bot and was told it is "
         "private.", False)], walk
    refused = [r for r in claude_home.audit() if r["action"] == "stranger_refused"]
    assert [r["who_id"] for r in refused] == [STRANGER["id"]], refused

    # /new "My Project": a quoted name with a space becomes My-Project.
    named = phone.say('/new "My Project"')
    phone.wait(lambda snap: any("My-Project started in" in p["text"]
                                for p in phone.replies_to(named["message_id"], snap)), 20,
               "the started line")
    daemon.wait_session(lambda s: s["state"] == "ready", 40, "My-Project ready",
                        name="claude-My-Project")
    assert not buzzing(walk.step('/new "My Project"')), walk

    _end(phone, daemon, "My-Project", walk)
    _end(phone, daemon, "walk", walk)
    before = len(phone.sent_texts())
    phone.say("/status")  # its answer comes after anything the sessions' ends said
    phone.wait(lambda snap: len(phone.sent_texts(snap)) > before, 15, "the status")
    walk.step("/status after the kills")
    # each kill said once, by its question (Claude Code's SessionEnd used to add a line)
    assert not [t for t in phone.sent_texts() if "Session ended" in t], walk
    # Nothing the bot sent in the whole walk was sent twice.  (Two short tasks' cards may
    # both end as "✅ walk · done · 0s · $0.01" when each was shown before its answer, as
    # on a loaded machine: each replies to its own prompt, so it is the same words about
    # another message, not a message sent twice.)
    sent = [(s.text, s.reply_to) for s in walk.sent if s.chat == phone.chat_id]
    assert len(sent) == len(set(sent)), walk
    walk.step("the end")
    assert not _refused(phone), walk


TUI_ARGS = ("--permission-mode", "default", "--allowedTools", "Bash,Read,AskUserQuestion")


def _card(phone: Phone, words: str, timeout: float = 30.0) -> dict:
    return phone.wait_message(lambda m: text_of(m).startswith(words), timeout, repr(words))


def test_the_walk_at_a_session_with_tools(daemon, dtach_session, fake_anthropic, fake_telegram):
    """The same person at a session doing work: a card, a question, ⏹, /compact."""
    from e2e.kit.questions import COLOUR

    phone = Phone(fake_telegram)
    walk = Transcript(phone)
    dtach_session(*TUI_ARGS)
    daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                        "the session ready")
    walk.step("a session at the computer")

    # Two steps, then the answer: the card (silent) ends done with its rows, and does not
    # quote the answer that arrives under it; only the answer buzzes.
    fake_anthropic.script("W-CARD", fa.bash("sleep 2; echo row-one"), fa.bash("echo row-two"),
                          fa.text("Two steps done."))
    msg = phone.say("W-CARD run two steps")
    _answered(phone, msg, "Two steps done.")
    done = _card(phone, "✅ e2e · done")
    shown = walk.step("two steps and an answer")
    assert "✓ Bash: echo row-two" in text_of(done), walk
    assert "Two steps done." not in text_of(done), walk
    assert buzzing(shown) == ["e2e\nTwo steps done."], walk

    # A question, tapped: the verdict goes under the question, which shows once.
    fake_anthropic.script("W-ASK", fa.tool("AskUserQuestion", {"questions": [COLOUR]}),
                          fa.text("Blue it is."))
    msg = phone.say("W-ASK style the button")
    question = phone.wait_message(lambda m: text_of(m).startswith("❓ e2e · Colour")
                                  and "3. Blue" in buttons(m), 40, "the question")
    time.sleep(1.0)  # the TUI draws its picker a moment before it reads keys
    phone.toast(phone.tap(question, "3. Blue"))
    _answered(phone, msg, "Blue it is.")
    answered = phone.wait_message(lambda m: m["message_id"] == question["message_id"]
                                  and "Answered by @owner" in text_of(m), 20, "the verdict")
    walk.step("a question tapped")
    assert text_of(answered).count(COLOUR["question"]) == 1, walk
    assert re.search(r"\n→ Blue\n✅ Answered by @owner · \d\d:\d\d$", text_of(answered)), walk
    assert not buttons(answered), walk

    # ⏹ on the card of a long step: the toast and the card say it, nothing more.
    fake_anthropic.script("W-STOP", fa.bash("python3 -c 'import time; time.sleep(30)'"),
                          fa.text("Never reached."))
    phone.say("W-STOP run the long step")
    card = phone.wait_message(lambda m: "time.sleep(30)" in text_of(m) and "⏹ Stop" in buttons(m),
                              30, "the card of the long step")
    walk.step("a long step")
    assert phone.toast(phone.tap(card, "⏹ Stop"))["text"] == "Stopping…"
    stopped = _card(phone, "⏹ e2e · interrupted")
    shown = walk.step("⏹ tapped")
    assert stopped["message_id"] == card["message_id"] and not buttons(stopped), walk
    assert [s.text for s in shown if not s.text.startswith("📟")] == [], walk
    assert not [t for t in phone.sent_texts() if "Stop sent" in t], walk

    # /compact: said when sent, while it runs, and when done; the ended card stays as it was.
    phone.say("/compact")
    phone.wait(lambda snap: any("Conversation compacted" in t for t in phone.sent_texts(snap)),
               30, "the compacted line")
    walk.step("/compact")
    sent = phone.sent_texts()
    said = [t for t in sent if "compact" in t.lower()][-3:]
    # (the reply to /compact and Claude Code's own "compacting" race: the reply goes once
    # the keys are typed, and on a loaded machine the hook's notice can come first)
    assert sorted(said[:2]) == ["📦 /compact sent to e2e.",
                                "🔄 e2e · Compacting the conversation"], walk
    assert said[2] == "📦 e2e · Conversation compacted", walk
    assert not [p for p in phone.calls("editMessageText") if "Compacting" in str(p["text"])], walk
    walk.step("the end")
    assert not _refused(phone), walk
