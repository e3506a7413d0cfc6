"""Claude's questions answered from the chat on the real Claude Code: one tap, multi-select
toggles, two questions stepped through, an answer in words; the model receives exactly the
chosen answers."""

from __future__ import annotations

import pytest

from e2e.kit.chat import Phone, buttons, text_of
from e2e.kit.questions import COLOUR, TOPPINGS
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

TUI_ARGS = ("--permission-mode", "default", "--allowedTools", "Bash,Write,Edit,Read")


def _ready(daemon) -> None:
    daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                        "the session ready")


def _question(phone: Phone, header: str) -> dict:
    return phone.wait_message(lambda m: text_of(m).startswith(f"❓ e2e · {header}")
                              and bool(buttons(m)), 40, f"the {header} question")


def _tap(phone: Phone, message_id: int, label: str) -> None:
    """Tap ``label`` on the message as it is now (its buttons change as one answers)."""
    now = phone.wait(lambda snap: (lambda m: m if m and label in buttons(m) else None)(
        snap["messages"].get((phone.chat_id, message_id))), 20, f"the button {label}")
    phone.toast(phone.fake.tap(message_id, buttons(now)[label]))


def _result(fake_anthropic, key: str) -> str:
    results = [b for r in fake_anthropic.requests_with(key) for b in r.tool_results()]
    assert results, "the model never got an answer"
    return str(results[0].get("content"))


def test_one_tap_answers_a_question(daemon, dtach_session, fake_anthropic, fake_telegram):
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-ASK1", fa.tool("AskUserQuestion", {"questions": [COLOUR]}),
                          fa.text("Blue it is."))
    dtach_session(*TUI_ARGS)
    _ready(daemon)
    phone.say("E2E-ASK1 style the button")

    question = _question(phone, "Colour")
    assert list(buttons(question))[:3] == ["1. Green", "2. Red", "3. Blue"]
    _tap(phone, question["message_id"], "3. Blue")

    phone.wait(lambda snap: any("Blue it is." in t for t in phone.sent_texts(snap)), 40, "answer")
    assert 'Which colour should the button be?"="Blue"' in _result(fake_anthropic, "E2E-ASK1")
    done = phone.wait(lambda snap: (lambda m: m if m and "Answered by @owner" in text_of(m)
                                    else None)(snap["messages"].get((phone.chat_id,
                                                                     question["message_id"]))),
                      20, "the verdict on the question")
    assert "→ Blue" in text_of(done) and not buttons(done)


def test_multi_select_then_a_second_question(daemon, dtach_session, fake_anthropic,
                                             fake_telegram):
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-ASK2",
                          fa.tool("AskUserQuestion", {"questions": [TOPPINGS, COLOUR]}),
                          fa.text("Order placed."))
    dtach_session(*TUI_ARGS)
    _ready(daemon)
    phone.say("E2E-ASK2 order")

    question = _question(phone, "Toppings")
    mid = question["message_id"]
    _tap(phone, mid, "☐ Cheese")
    _tap(phone, mid, "☐ Olives")
    _tap(phone, mid, "✅ Next")
    _tap(phone, mid, "1. Green")

    phone.wait(lambda snap: any("Order placed." in t for t in phone.sent_texts(snap)), 40, "answer")
    result = _result(fake_anthropic, "E2E-ASK2")
    assert '"Which toppings do you want?"="Cheese, Olives"' in result, result
    assert '"Which colour should the button be?"="Green"' in result, result


def test_an_answer_in_words(daemon, dtach_session, fake_anthropic, fake_telegram):
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-ASK3", fa.tool("AskUserQuestion", {"questions": [COLOUR]}),
                          fa.text("Purple then."))
    dtach_session(*TUI_ARGS)
    _ready(daemon)
    phone.say("E2E-ASK3 style the button")

    question = _question(phone, "Colour")
    _tap(phone, question["message_id"], "✍️ Other…")
    phone.wait(lambda snap: any("Send your answer" in t for t in phone.sent_texts(snap)), 20,
               "the prompt for words")
    phone.say("a deep purple")

    phone.wait(lambda snap: any("Purple then." in t for t in phone.sent_texts(snap)), 40, "answer")
    result = _result(fake_anthropic, "E2E-ASK3")
    assert '"Which colour should the button be?"="a deep purple"' in result, result
