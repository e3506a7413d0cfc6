"""Every Output kind, every command and every result crosses the broker and comes back
equal."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from aipager.daemon import notifier
from aipager.daemon.dialogkeys import Answer
from aipager.daemon.model import QueuedMessage, Request, Session, State, Task
from aipager.daemon.port import (Already, ByHook, ByKeys, Gone, InTerminal, KeysFailed, Outcome,
                                 Refused, Who)
from aipager.proto.errors import InvalidSessionName, SessionError, SessionNotFound
from aipager.hub import codec, commands
from aipager.daemon.worktree import Diff

SAMPLES = [
    notifier.Card("claude-a", "card text", 3, task=2, final=True),
    notifier.Notice("claude-a", "62% context", notice=notifier.NoticeName.CONTEXT_WARNING,
                    extra={"pct": 62}),
    notifier.Prompted("claude-a", "typed at the computer", task=4),
    notifier.Answer("claude-a", "**done**", 9, True, digest="d1", task=4, prompt_id="p"),
    notifier.Permission("claude-a", "Bash: ls", key="k1", tool="Bash", detail="ls",
                        buttons=["allow", "deny", "s0"], scopes=["📁 Allow /x"], separate=True,
                        request_id="r1", reply_addr="/run/x.sock", agent_id="ag",
                        preview="diff", diff="--- a\n+++ b\n", late_answer="allow"),
    notifier.Question("claude-a", "Which?", key="q1", options=["a", "b"], multi_select=True,
                      questions=[{"question": "Which?", "header": "h", "options": ["a"],
                                  "multi": False}]),
    notifier.RequestClosed("claude-a", key="k1", request_id="r1", via="hook", answer="allow",
                           who="@me"),
    notifier.RequestAnswered("claude-a", key="k1", answer="deny", who="@me"),
    notifier.RequestUpdate("claude-a", key="k1", request_id="r2", reply_addr="/x"),
    notifier.Reaction("claude-a", msg_id="5", chat_id="42", emoji="👍"),
    notifier.Release("claude-a", "held text", msg_id="6", chat_id="42"),
    notifier.Diff("claude-a", "@@ -1 +1 @@", tool="Edit", row="t1"),
    notifier.Files("claude-a", "caption", files=["/x/a.png"], cwd="/x", task=2,
                   tool_use_id="tu"),
]


def test_every_output_kind_has_a_sample():
    kinds = {cls.kind for cls in _subclasses(notifier.Output) if cls.kind}  # not the bases
    assert kinds == {o.kind for o in SAMPLES} == set(codec.OUTPUT_KINDS)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


@pytest.mark.parametrize("out", SAMPLES, ids=lambda o: o.kind)
def test_outputs_round_trip_through_json_bytes(out):
    wire = orjson.dumps(codec.output_to_json(out))
    back = codec.output_from_json(orjson.loads(wire))
    assert back == out and type(back) is type(out)


@pytest.mark.parametrize("doc", [None, [], {"kind": "nope", "session": "s"},
                                 {"kind": "card"}, {"kind": "notice", "session": "s",
                                                    "notice": "no_such_notice"}])
def test_a_record_this_version_cannot_read_is_refused(doc):
    with pytest.raises(codec.CodecError):
        codec.output_from_json(doc)


def test_unknown_fields_are_ignored():
    doc = codec.output_to_json(SAMPLES[0]) | {"from_the_future": 1}
    assert codec.output_from_json(doc) == SAMPLES[0]


def test_a_session_crosses_without_what_only_its_card_needs():
    sess = Session("claude-a", "a", 1.0, state=State.WORKING, cwd="/w", cost_usd=1.5)
    sess.task = Task(seq=3, started_at=2.0, prompt="go",
                     authors=[{"user_id": 7, "msg_id": 9, "chat_id": 42}])
    sess.requests.append(Request("k", "permission", "Bash", 2.0, detail="ls"))
    sess.queue.append(QueuedMessage("9", "go", 2.0, chat_id="42", status="typed"))
    wire = orjson.dumps(codec.session_to_json(sess))
    back = codec.session_from_json(orjson.loads(wire))
    assert (back.name, back.label, back.state, back.cwd, back.cost_usd) == \
        ("claude-a", "a", State.WORKING, "/w", 1.5)
    assert back.task == sess.task and back.requests == sess.requests and back.queue == sess.queue
    assert "rows" not in orjson.loads(wire)


WHO = Who("@alice", 7, "admin")
COMMANDS = [
    commands.QueueChatMessage("claude-a", 5, "hi", 42, "alice", True, "dialog"),
    commands.DropChatMessage("claude-a", "5"),
    commands.AnswerRequest("claude-a", "k1", "allow_always", WHO, "because", 1),
    commands.AnswerRequest("claude-a", "k1", "allow", WHO, edit="make test -k fast"),
    commands.AnswerQuestion("claude-a", "q1", WHO, (Answer([0, 2], "other"), Answer([], "x"))),
    commands.AnswerQuestion("claude-a", "q1", WHO, None),
    commands.StartSession("new", "resume-id", "/work"),
    commands.StartSession("new", "", "/work", "plan"),
    commands.SessionChanges("claude-a", "user", 7),
    commands.StopSession("claude-a"),
    commands.KillSession("a"),
    commands.SwitchModel("claude-a", "opus"),
    commands.TypePrompt("claude-a", "fix it", {"msg_id": 5, "role": "user", "reply_to": None}),
    commands.TypeText("claude-a", "/compact"),
    commands.TypePrompt("claude-a", "check /h/in/chat-1/a.jpg", {"msg_id": 6},
                        {"/h/in/chat-1/a.jpg": "0123456789abcdef0123"}),
    commands.QueueChatMessage("claude-a", 7, "see /h/x", files={"/h/x": "89abcdef"}),
    commands.PutFile("0123456789abcdef0123", "a photo.jpg", 1, 3, "aGVsbG8="),
]


def test_every_command_has_a_sample():
    assert {c.name for c in COMMANDS} == set(commands.COMMANDS)


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.name)
def test_commands_round_trip(cmd):
    wire = orjson.dumps(commands.command_to_json(cmd))
    assert commands.command_from_json(orjson.loads(wire)) == cmd


def test_a_command_this_version_does_not_know_is_refused():
    with pytest.raises(codec.CodecError):
        commands.command_from_json({"name": "rm_rf"})
    with pytest.raises(codec.CodecError):
        commands.command_from_json({"name": "type_text", "bogus": 1})


RESULTS = [None, True, False, "claude-new", ByHook(), ByKeys(), Already(), Gone(),
           InTerminal(), KeysFailed("not running"), Refused("the floor"),
           Diff("@@ -1 +1 @@\n-a\n+b\n", ("a.txt", "b c.txt"), hidden=2, cut=True),
           Diff(repo=False)]


def test_every_outcome_the_port_names_has_a_sample():
    assert {type(v) for v in RESULTS if type(v) in Outcome.__args__} == set(Outcome.__args__)


@pytest.mark.parametrize("value", RESULTS, ids=repr)
def test_results_round_trip(value):
    wire = orjson.dumps(commands.result_to_json(value))
    back = commands.result_from_json(orjson.loads(wire))
    assert back == value and type(back) is type(value)


@pytest.mark.parametrize("exc", [SessionNotFound("session jim is not running"),
                                 InvalidSessionName("bad name"), SessionError("busy"),
                                 ValueError("the answers do not fit"),
                                 commands.HostUnreachable("late")])
def test_errors_are_raised_again_as_themselves(exc):
    wire = orjson.dumps(commands.error_to_json(exc))
    with pytest.raises(type(exc), match=str(exc)) as got:
        commands.result_from_json(orjson.loads(wire))
    assert type(got.value) is type(exc)


def test_any_other_error_is_host_failed():
    wire = orjson.dumps(commands.error_to_json(RuntimeError("boom")))
    with pytest.raises(commands.HostFailed, match="boom"):
        commands.result_from_json(orjson.loads(wire))


def test_outcomes_are_frozen_dataclasses():
    assert all(dataclasses.is_dataclass(v) for v in RESULTS[4:])


async def test_a_new_session_in_a_folder_the_host_lacks_starts_in_its_home(tmp_path):
    class Port:
        env = {"HOME": str(tmp_path)}

        async def start_session(self, label, *, resume_id="", cwd="", mode=""):
            return (label, resume_id, cwd) + ((mode,) if mode else ())

    got = await commands.StartSession("web", "", "/no/such/folder/on/this/host").run(Port())
    assert got == ("web", "", str(tmp_path))
    got = await commands.StartSession("web", "r1", str(tmp_path)).run(Port())
    assert got == ("web", "r1", str(tmp_path))
    got = await commands.StartSession("web", "", str(tmp_path), "plan").run(Port())
    assert got == ("web", "", str(tmp_path), "plan")


def test_a_diff_answer_that_does_not_fit_is_refused():
    doc = commands.result_to_json(Diff("x", ("a",)))
    doc["ok"]["files"] = "a"  # a string where the names go
    with pytest.raises(codec.CodecError):
        commands.result_from_json(doc)
