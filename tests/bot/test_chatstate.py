"""The chat state's records: buttons stand for typed references, a live message remembers
its text and its buttons apart, a kill question its stage; a file an older version saved
(those flags inside the strings) loads into the same records."""

from __future__ import annotations

import orjson

from aipager.bot.kept import FormAsk, Prefs, QuestionAsk
from aipager.bot.chatstate import ChatState, KillStage, RequestRef


def test_a_request_handle_stands_for_its_session_and_key_whatever_they_hold():
    state = ChatState()
    ref = RequestRef("claude-jim@box", "p:t1:")
    number = state.handle("request", ref)
    assert state.handle("request", ref) == number  # the same button, the same handle
    assert state.resolve_request("request", number) == ref
    assert state.resolve_request("ask", number) is None  # another kind: expired
    assert state.resolve("request", number) is None
    session = state.handle("session", "claude-jim")
    assert state.resolve("session", session) == "claude-jim"
    assert state.resolve_request("session", session) is None


def test_text_and_buttons_are_recorded_apart():
    state = ChatState()
    assert state.show("card", "working", "stop")
    assert not state.show("card", "working", "stop")
    assert state.show("card", "working")  # the same text without its ⏹: edited
    assert state.shown_text("card") == "working"
    assert state.shown_text("other") is None


def test_the_state_round_trips_through_json():
    state = ChatState()
    state.handle("ask", RequestRef("claude-a", "q:1:"))
    state.show("card", "text", "stop")
    state.kills["claude-a"] = KillStage.BY_CHAT
    back = ChatState.from_json(orjson.loads(orjson.dumps(state.to_json())))
    assert back.handles == state.handles and back.shown == state.shown
    assert back.kills == {"claude-a": KillStage.BY_CHAT}


def test_an_older_versions_file_loads_into_the_records():
    old = {"handles": {"1": ["request", "claude-a\0p:t1:"], "2": ["session", "claude-a"]},
           "shown": {"card": "working\0stop", "kill:claude-a": "\u2063🗑 a ended by @me.",
                     "req": "🔐 a · Bash"},
           "kills": {"claude-b": "asked", "claude-c": "sudo"}}
    state = ChatState.from_json(old)
    assert state.resolve_request("request", 1) == RequestRef("claude-a", "p:t1:")
    assert state.resolve("session", 2) == "claude-a"
    assert state.shown["card"] == ["working", "stop"]
    assert state.shown_text("kill:claude-a") == "🗑 a ended by @me."
    assert state.shown["req"] == ["🔐 a · Bash", ""]
    assert state.kills == {"claude-b": KillStage.ASKED}  # a stage no version wrote is left out


def test_a_question_or_form_half_answered_comes_back_typed_and_a_damaged_one_is_left_out():
    """What the chat asks step by step survives a restart as its record; a saved one an
    older version wrote (the form's marker, dicts) loads the same; what does not fit is left
    at its default or out."""
    state = ChatState()
    state.asks["req:claude-a:q:1:"] = QuestionAsk("claude-a", "q:1:", -100,
                                                  [{"question": "Which?", "options": ["a", "b"]}],
                                                  step=1, answers=[{"picks": [1], "text": ""}],
                                                  toggled=[0])
    state.asks["req:claude-a:f:2:"] = FormAsk("claude-a", "f:2:", -100, "releaser", "Ship?",
                                              [{"name": "channel", "kind": "enum"}], step=1,
                                              values={"channel": "beta"})
    doc = orjson.loads(orjson.dumps(state.to_json()))
    assert doc["asks"]["req:claude-a:f:2:"]["form"] is True
    doc["asks"]["bad"] = {"session": 5, "key": "x"}
    doc["asks"]["odd"] = {"session": "claude-b", "key": "q:3:", "chat": "nope", "step": "2",
                          "questions": [{"question": "Why?"}]}
    back = ChatState.from_json(doc)
    assert back.asks["req:claude-a:q:1:"] == state.asks["req:claude-a:q:1:"]
    assert back.asks["req:claude-a:f:2:"] == state.asks["req:claude-a:f:2:"]
    assert "bad" not in back.asks
    assert back.asks["odd"] == QuestionAsk("claude-b", "q:3:", 0, [{"question": "Why?"}])


def test_a_chats_settings_come_back_typed_and_what_does_not_fit_keeps_its_default():
    state = ChatState()
    state.set_pref(-100, "diffs", True)
    state.set_pref(-100, "style", "brief")
    state.set_pref(-100, "quiet", "no")  # not a yes/no: nothing changes
    state.set_pref(-100, "colour", "red")  # no such setting
    assert state.prefs_of(-100) == Prefs(style="brief", diffs=True)
    assert state.prefs_of(7) == Prefs()
    doc = orjson.loads(orjson.dumps(state.to_json()))
    doc["prefs"]["8"] = {"detail": "compact", "quiet": "yes", "private": True}
    back = ChatState.from_json(doc)
    assert back.prefs_of(-100) == Prefs(style="brief", diffs=True)
    assert back.prefs_of(8) == Prefs(detail="compact", private=True)


def test_the_outboxs_unsent_work_comes_back_typed_and_a_damaged_op_is_left_out():
    from aipager.bot.ops import Live, Post, Upload

    state = ChatState(pending=[Post(-100, "answer", key="a", buzz=True),
                               Live(-100, "card", key="card:jim:1"),
                               Upload(-100, "a.md", data=b"# whole\n")])
    doc = orjson.loads(orjson.dumps(state.to_json()))
    doc["pending"].insert(1, {"kind": "post", "chat_id": "not a chat", "text": 5, "odd": 1})
    doc["pending"].append({"kind": "teleport", "chat_id": -100})
    back = ChatState.from_json(doc)
    assert back.pending == state.pending
