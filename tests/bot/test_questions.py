"""Claude's questions (AskUserQuestion) answered from the chat: buttons per option in
Claude's order, toggles for multi-select, several questions stepped through, answers in
words; the keys typed are the measured ones (see test_dialogkeys)."""

from __future__ import annotations

import re

from bot.conftest import eventually

from aipager.daemon import dialogkeys as dk


def _ask(chat, session, questions, tool_use_id="q1"):
    chat.feed(session, "UserPromptSubmit", prompt="pick", prompt_id="p1")
    chat.feed(session, "PreToolUse", tool_name="AskUserQuestion", tool_use_id=tool_use_id,
              tool_input={"questions": questions})
    # Claude Code's PermissionRequest for the picker: it is on screen now
    chat.feed(session, "PermissionRequest", tool_name="AskUserQuestion", tool_use_id=tool_use_id,
              tool_input={"questions": questions})


def _q(text, options, multi=False, header="Choice"):
    return {"question": text, "header": header, "multiSelect": multi,
            "options": [{"label": o, "description": ""} for o in options]}


async def _message(chat, needle):
    """The question's own message (the card mentions the question too)."""
    def ours(text):
        return needle in text and text.startswith(("❓", "📋"))
    await chat.fake.wait_for("sendMessage", lambda p: ours(str(p["text"])))
    return next(m for m in chat.fake.bot_messages(chat.chat_id) if ours(m["text"]))


def _buttons(chat, message_id):
    message = chat.fake.message(chat.chat_id, message_id)
    return {b["text"]: b["callback_data"] for row in message["reply_markup"]["inline_keyboard"]
            for b in row}


async def test_one_question_one_tap(chat):
    session = chat.start("jim")
    _ask(chat, session, [_q("Which colour?", ["Red", "Green", "Blue"])])
    message = await _message(chat, "Which colour?")
    buttons = _buttons(chat, message["message_id"])
    assert list(buttons)[:3] == ["1. Red", "2. Green", "3. Blue"]
    await chat.fake.user_taps(message["message_id"], buttons["3. Blue"])
    await eventually(lambda: chat.sessions.keys)
    assert chat.sessions.keys == [(session, [b"3"])]
    edited = await chat.fake.wait_for("editMessageText", lambda p: "Answered by @owner" in p["text"])
    # the message shows the question once: the answer goes under it, not after it again
    assert edited["text"].count("Which colour?") == 1, edited["text"]
    assert re.search(r"Which colour\?\n→ Blue\n✅ Answered by @owner · \d\d:\d\d$",
                     edited["text"]), edited["text"]
    # A second tap on the old buttons types nothing.
    query = await chat.fake.user_taps(message["message_id"], buttons["1. Red"])
    await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == query)
    assert len(chat.sessions.keys) == 1


async def test_multi_select_and_a_second_question(chat):
    session = chat.start("jim")
    _ask(chat, session, [_q("Toppings?", ["Cheese", "Ham", "Olives"], multi=True),
                         _q("Size?", ["Small", "Large"])])
    message = await _message(chat, "Toppings?")
    mid = message["message_id"]
    await chat.fake.user_taps(mid, _buttons(chat, mid)["☐ Cheese"])
    await chat.fake.wait_for("editMessageText", lambda p: "Toppings?" in p["text"])
    await eventually(lambda: "☑ Cheese" in _buttons(chat, mid))
    await chat.fake.user_taps(mid, _buttons(chat, mid)["☐ Olives"])
    await eventually(lambda: "☑ Olives" in _buttons(chat, mid))
    await chat.fake.user_taps(mid, _buttons(chat, mid)["✅ Next"])
    await eventually(lambda: "1. Small" in _buttons(chat, mid), what="question 2 shown")
    assert chat.sessions.keys == []  # nothing typed before the last answer
    await chat.fake.user_taps(mid, _buttons(chat, mid)["2. Large"])
    await eventually(lambda: chat.sessions.keys)
    expected = dk.questions([dk.Question("Toppings?", ("Cheese", "Ham", "Olives"), True),
                             dk.Question("Size?", ("Small", "Large"))],
                            [dk.Answer([0, 2]), dk.Answer([1])])
    assert chat.sessions.keys == [(session, expected)]
    final = await chat.fake.wait_for("editMessageText", lambda p: "Answered by" in p["text"])
    assert "Toppings? → Cheese, Olives" in final["text"] and "Size? → Large" in final["text"]


async def test_an_answer_in_words(chat):
    session = chat.start("jim")
    _ask(chat, session, [_q("Name the branch", ["main", "dev"])])
    message = await _message(chat, "Name the branch")
    await chat.fake.user_taps(message["message_id"], _buttons(chat, message["message_id"])["✍️ Other…"])
    await chat.fake.wait_for("sendMessage", lambda p: "Send your answer" in p["text"])
    await chat.fake.user_says("feature/login")
    await eventually(lambda: chat.sessions.keys)
    assert chat.sessions.keys == [(session, [dk.DOWN, dk.DOWN, b"feature/login", dk.ENTER])]
    assert chat.sessions.typed == []  # the words answered the dialog, not a new prompt


async def test_after_other_a_question_answered_in_the_terminal_lets_the_message_go_in(chat):
    # The words were asked for (aiogram's FSM); the question closed before they came: the
    # message is then what any message is, a prompt, and the state is gone.
    session = chat.start("jim")
    _ask(chat, session, [_q("Name the branch", ["main", "dev"])])
    message = await _message(chat, "Name the branch")
    await chat.fake.user_taps(message["message_id"], _buttons(chat, message["message_id"])["✍️ Other…"])
    await chat.fake.wait_for("sendMessage", lambda p: "Send your answer" in p["text"])
    chat.feed(session, "PostToolUse", tool_name="AskUserQuestion", tool_use_id="q1",
              tool_input={"questions": [_q("Name the branch", ["main", "dev"])]},
              tool_response={})
    await chat.fake.wait_for("editMessageText", lambda p: "answered in the terminal" in p["text"])
    chat.feed(session, "Stop")
    await chat.fake.user_says("now run the tests")
    typed = await eventually(lambda: chat.sessions.typed)
    assert typed[0][:2] == (session, "now run the tests")
    assert chat.sessions.keys == []
    await chat.fake.user_says("and lint")
    await eventually(lambda: len(chat.sessions.typed) == 2 or chat.sessions.keys,
                     what="the second message")
    assert chat.sessions.keys == [] and chat.sessions.typed[1][1] == "and lint"


async def test_answered_in_the_terminal_first(chat):
    session = chat.start("jim")
    _ask(chat, session, [_q("Proceed?", ["Yes", "No"])])
    message = await _message(chat, "Proceed?")
    chat.feed(session, "PostToolUse", tool_name="AskUserQuestion", tool_use_id="q1",
              tool_input={"questions": [_q("Proceed?", ["Yes", "No"])]}, tool_response={})
    await chat.fake.wait_for("editMessageText", lambda p: "answered in the terminal" in p["text"])
    stale = message["reply_markup"]["inline_keyboard"][0][0]["callback_data"]  # as first shown
    assert not chat.fake.message(chat.chat_id, message["message_id"]).get("reply_markup")
    query = await chat.fake.user_taps(message["message_id"], stale)
    toast = await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == query)
    assert "no longer open" in toast["text"]
    assert chat.sessions.keys == []


async def test_decline(chat):
    session = chat.start("jim")
    _ask(chat, session, [_q("Proceed?", ["Yes", "No"])])
    message = await _message(chat, "Proceed?")
    await chat.fake.user_taps(message["message_id"], _buttons(chat, message["message_id"])["⏹ Decline"])
    await eventually(lambda: chat.sessions.keys)
    assert chat.sessions.keys == [(session, [dk.ESC])]
    await chat.fake.wait_for("editMessageText", lambda p: "Declined by @owner" in p["text"])


async def test_plan_approval_has_its_own_words(chat):
    session = chat.start("jim")
    chat.feed(session, "PermissionRequest", tool_name="ExitPlanMode", tool_use_id="x1",
              tool_input={"plan": "1. Read the code\n2. Fix the bug"})
    message = await _message(chat, "Approve plan?")
    assert "2. Fix the bug" in message["text"]
    labels = [b["text"] for row in message["reply_markup"]["inline_keyboard"] for b in row]
    assert labels[:2] == ["✅ Approve plan", "✍️ Keep planning"]


async def test_a_plan_is_never_answered_by_guessed_keys(chat):
    session = chat.start("jim")
    chat.feed(session, "PermissionRequest", tool_name="ExitPlanMode", tool_use_id="x1",
              tool_input={"plan": "the plan"})  # no reply address: the hook is not waiting
    message = await _message(chat, "Approve plan?")
    data = message["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    query = await chat.fake.user_taps(message["message_id"], data)
    toast = await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == query)
    assert "terminal" in toast["text"] and chat.sessions.keys == []
    assert chat.daemon.core.registry.get(session).requests[0].answered == ""


async def test_a_session_waiting_on_a_question_waits_for_an_answer(chat):
    session = chat.start("jim")
    _ask(chat, session, [_q("Which colour?", ["Red", "Green"])])
    await _message(chat, "Which colour?")
    card = await chat.fake.wait_for("sendMessage", lambda p: str(p["text"]).startswith("🔐 jim"))
    assert "waiting for your answer" in card["text"], card["text"]
    await chat.fake.user_says("/status")
    status = await chat.fake.wait_for("sendMessage", lambda p: "Sessions:" in str(p["text"]))
    assert "jim · waiting for your answer" in status["text"], status["text"]
    assert "question" not in " ".join(t for t in chat.sent_texts() if "waiting for" in t)


async def test_a_reply_to_the_question_is_its_answer_in_words(chat):
    session = chat.start("jim")
    _ask(chat, session, [_q("Which branch?", ["main", "dev"])])
    message = await _message(chat, "Which branch?")
    await chat.fake.user_says("feature/login", reply_to=message["message_id"])
    await eventually(lambda: chat.sessions.keys, what="the answer typed")
    assert chat.sessions.keys == [(session, [dk.DOWN, dk.DOWN, b"feature/login", dk.ENTER])]
    assert chat.sessions.typed == []  # the words answered the dialog, not a new prompt
    await chat.fake.wait_for("editMessageText", lambda p: "Which branch?\n→ “feature/login”" in p["text"])
