"""Every Output kind, every command and every result crosses the broker and comes back
equal."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from typing import get_args

from fakes.port import FakePort

from aipager.port import outputs as notifier
from aipager.port.model import QueuedMessage, Request, Session, State, Task
from aipager.hub import codec, commands
from aipager.port.commands import (AssignRole, InviteAs, JoinTeam, KeepFiles, ReadAudit,
                                   AnswerForm, AnswerQuestion, AnswerRequest, Command,
                                   CompactSession, KillSession, Mode, QuestionAnswer, ResumeSession, SendPrompt,
                                   ShowChanges, StartSession, StopTask, SwitchModel,
                                   TrustFolder)
from aipager.port.results import (AuditRecords, FileNotKept, FilesKept, Invitation, Joined,
                                  RoleGiven, Already, ByHook, ByKeys, Changes, Compacting, Declined,
                                  Ended, Failed, Gone, Held, InTerminal, KeysFailed, Refused,
                                  Result, Resumed, Started, Stopping, Switching, Trusted, Typed)
from aipager.port.rights import Reason
from aipager.port.who import Person
from aipager.proto.errors import InvalidSessionName, SessionError, SessionNotFound
from tests.support.door import door

SAMPLES = [
    notifier.Card("claude-a", "card text", 3, task=2, final=True),
    notifier.Notice("claude-a", "62% context", notice=notifier.NoticeName.CONTEXT_WARNING,
                    extra={"pct": 62}),
    notifier.Prompted("claude-a", "typed at the computer", task=4),
    notifier.Prompted("claude-a", "sent from the page", task=5, by="@web"),
    notifier.Answer("claude-a", "**done**", 9, True, digest="d1", task=4, prompt_id="p"),
    notifier.Permission("claude-a", "Bash: ls", key="k1", tool="Bash", detail="ls",
                        buttons=["allow", "deny", "s0"], scopes=["📁 Allow /x"], separate=True,
                        request_id="r1", reply_addr="/run/x.sock", agent_id="ag",
                        preview="diff", diff="--- a\n+++ b\n", late_answer="allow"),
    notifier.Question("claude-a", "Which?", key="q1", options=["a", "b"], multi_select=True,
                      questions=[{"question": "Which?", "header": "h", "options": ["a"],
                                  "multi": False}]),
    notifier.Form("claude-a", "📋 a · releaser asks: Where?", key="f:r3", server="releaser",
                  message="Where?", fields=[{"name": "channel", "kind": "enum", "title": "C",
                                             "options": ["a", "b"], "required": True}],
                  request_id="r3", reply_addr="/run/y.sock", agent_id="ag", separate=True),
    notifier.RequestClosed("claude-a", key="k1", request_id="r1", via="hook", answer="allow",
                           who="@me"),
    notifier.RequestAnswered("claude-a", key="k1", answer="deny", who="@me"),
    notifier.RequestUpdate("claude-a", key="k1", request_id="r2", reply_addr="/x"),
    notifier.Reaction("claude-a", msg_id="5", chat_id="42", emoji="👍"),
    notifier.Release("claude-a", "held text", msg_id="6", chat_id="42"),
    notifier.Diff("claude-a", "@@ -1 +1 @@", tool="Edit", row="t1"),
    notifier.Files("claude-a", "caption", files=["/x/a.png", "/x/.env"], cwd="/x", task=2,
                   tool_use_id="tu", copies=[notifier.FileCopy("/o/1-a.png", "a.png", True)],
                   refused=[notifier.FileRefusal("/x/.env", "secret", "a secret")]),
    notifier.StateChanged("claude-a", "ready", state="ready"),
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


@pytest.mark.parametrize("doc", [None, [], {"record": "nope", "session": "s"},
                                 {"record": "card"}, {"record": "notice", "session": "s",
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


ANA = Person(7, "ana", "admin", may_manage=False, username="ana_b")
COMMANDS = [
    commands.Ask(SendPrompt(ANA, "claude-a", "fix it", 5, 42, style="brief",
                            reply_to={"text": "before", "sent_at": 1.5})),
    commands.Ask(SendPrompt(ANA, "claude-a", "check /h/in/chat-1/a.jpg", 6, "p:1", queued=True),
                 {"/h/in/chat-1/a.jpg": "0123456789abcdef0123"}),
    commands.Ask(AnswerRequest(ANA, "claude-a", "k1", "allow_always", "because", 1)),
    commands.Ask(AnswerRequest(ANA, "claude-a", "k1", "allow", edit="make test -k fast")),
    commands.Ask(AnswerQuestion(ANA, "claude-a", "q1", [QuestionAnswer([0, 2], "other"),
                                                        QuestionAnswer([], "x")])),
    commands.Ask(AnswerQuestion(ANA, "claude-a", "q1", None)),
    commands.Ask(AnswerForm(ANA, "claude-a", "f:r3", "accept",
                            {"channel": "beta", "replicas": 3, "notify": False, "note": "“x”"})),
    commands.Ask(AnswerForm(ANA, "claude-a", "f:r3", "decline")),
    commands.Ask(StartSession(ANA, "new", "/work", "resume-id", Mode.PLAN)),
    commands.Ask(StartSession(ANA, "cx", agent="codex")),
    commands.Ask(StopTask(ANA, "claude-a")),
    commands.Ask(KillSession(ANA, "a")),
    commands.Ask(TrustFolder(ANA, "claude-a", yes=False)),
    commands.Ask(ShowChanges(ANA, "claude-a")),
    commands.Ask(CompactSession(ANA, "claude-a")),
    commands.Ask(SwitchModel(ANA, "claude-a", "opus")),
    commands.Ask(ResumeSession(ANA, "claude-a")),
    commands.Ask(AssignRole(ANA, 42, "user", "bo")),
    commands.Ask(InviteAs(ANA, "read_only")),
    commands.Ask(JoinTeam(ANA, "c0de", "ana")),
    commands.Ask(ReadAudit(ANA, 20)),
    commands.PutFile("0123456789abcdef0123", "a photo.jpg", 1, 3, "aGVsbG8="),
]


#: what a hub keeps to itself, never sent to a host (``HubPort.route``): the files a
#: person sends for a prompt are kept where their surface is and travel as ``PutFile``
HUBS_OWN = {KeepFiles}


def test_every_command_has_a_sample():
    assert {c.name for c in COMMANDS} == set(commands.COMMANDS)
    assert {type(c.command) for c in COMMANDS if isinstance(c, commands.Ask)} == \
        set(get_args(Command)) - HUBS_OWN


def test_what_the_hub_keeps_to_itself_is_never_routed_to_a_host():
    from aipager.hub.port import HubPort

    keep = KeepFiles(ANA, (("a.txt", b"x"),), "claude-a@box", "chat")
    hub = object.__new__(HubPort)  # (route reads nothing of the hub's for it)
    assert hub.route(keep) is None


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: type(getattr(c, "command", c)).__name__)
def test_commands_round_trip(cmd):
    wire = orjson.dumps(commands.command_to_json(cmd))
    back = commands.command_from_json(orjson.loads(wire))
    assert back == cmd
    if isinstance(cmd, commands.Ask):  # (records compare equal across list and tuple)
        assert type(back.command.who) is Person


def test_a_prompts_callback_stays_on_the_hub():
    cmd = commands.Ask(SendPrompt(ANA, "claude-a", "go", 5, 42, submitting=print))
    doc = orjson.loads(orjson.dumps(commands.command_to_json(cmd)))
    assert "submitting" not in doc["command"]
    assert commands.command_from_json(doc).command.submitting is None


def test_a_command_this_version_does_not_know_is_refused():
    with pytest.raises(codec.CodecError):
        commands.command_from_json({"name": "rm_rf"})
    with pytest.raises(codec.CodecError):
        commands.command_from_json({"name": "type_text", "session": "claude-a", "text": "x"})
    with pytest.raises(codec.CodecError):
        commands.command_from_json({"name": "put_file", "bogus": 1})


@pytest.mark.parametrize("bad", [
    {"record": "RmRf", "session": "claude-a"},
    {"record": "AnswerRequest", "who": {"user_id": 7, "label": "a", "role": "user"},
     "session": "claude-a", "key": "k", "kind": "sudo"},  # no such answer
    {"record": "SwitchModel", "who": "owner", "session": "claude-a", "model": "opus"},
    {"record": "StartSession", "who": {"user_id": 7, "label": "a", "role": "user"},
     "name": "x", "mode": "bypassPermissions"},
    {"record": "StopTask", "who": {"user_id": "7", "label": "a", "role": "user"},
     "session": "claude-a"},
    {"record": "SendPrompt", "who": {"user_id": 7, "label": "a", "role": "user",
                                   "may_prompt": "yes"},
     "session": "claude-a", "text": "x", "msg_id": 1, "chat_id": 2},
])
def test_a_use_case_that_does_not_fit_is_refused_where_it_is_read(bad):
    with pytest.raises(codec.CodecError):
        commands.command_from_json({"name": "ask", "command": bad})


RESULTS = [None, True, False, "claude-new", ByHook(), ByKeys(), Already(), Gone(),
           InTerminal(), KeysFailed("not running"), Refused("the floor"),
           Declined(Reason.NOT_RUNNING, "claude-a"), Declined(Reason.MAY_NOT_PROMPT),
           Typed("claude-a"), Held("claude-a", "task", "ana"), Held("claude-a", "dialog"),
           Failed("gone", "claude-a", "diff", "not_running"), Started("claude-b", "/w"),
           Stopping("claude-a", True), Ended("claude-a", False), Trusted("claude-a", "/w"),
           Changes("claude-a", "@@ -1 +1 @@\n-a\n+b\n", ("a.txt", "b c.txt"), 2, True),
           Changes("claude-a", "", repo=False), Compacting("claude-a"),
           Switching("claude-a", "opus"), Resumed("claude-a", "/w"),
           RoleGiven(42, "42", "user", "a role"), Invitation("read_only", "c0de", 1.5),
           FilesKept(("/f/a.txt",)), FileNotKept("b.txt", "too big", ("/f/a.txt",)),
           Joined(42, "ana", "user", "", 7),
           AuditRecords(({"action": "member_role", "who": "ana"},))]


def test_every_result_the_service_names_has_a_sample():
    assert {type(v) for v in RESULTS if v is not None and not isinstance(v, (bool, str))} == \
        set(get_args(Result))


@pytest.mark.parametrize("value", RESULTS, ids=repr)
def test_results_round_trip(value):
    wire = orjson.dumps(commands.result_to_json(value))
    back = commands.result_from_json(orjson.loads(wire))
    assert back == value and type(back) is type(value)
    if isinstance(value, Changes):
        assert isinstance(back.files, tuple)


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


def test_results_are_frozen_dataclasses():
    assert all(dataclasses.is_dataclass(v) and v.__dataclass_params__.frozen
               for v in RESULTS[4:])


async def test_a_new_session_in_a_folder_the_host_lacks_starts_in_its_default(tmp_path):
    port = FakePort({"HOME": str(tmp_path), "AIPAGER_HOME": str(tmp_path / "state")})
    owner = Person(1, "owner", "owner", exempt=True, never_held=True)
    got = await commands.Ask(StartSession(owner, "web", "/no/such/folder/on/this/host")).run(door(port))
    assert got == Started("claude-web", str(tmp_path))
    here = tmp_path / "here"
    here.mkdir()
    got = await commands.Ask(StartSession(owner, "web2", str(here), mode=Mode.PLAN)).run(door(port))
    assert got == Started("claude-web2", str(here))
    [_, (args, kwargs)] = port.calls("start_session")
    assert args == ("web2",) and kwargs == {"resume_id": "", "cwd": str(here), "mode": "plan"}


async def test_the_host_decides_with_its_own_service(tmp_path):
    """A reader's prompt is declined by the host's own rights check, and an owner's is
    typed there with its note (sender, role): the hub sent the person, not a decision."""
    port = FakePort({"HOME": str(tmp_path), "AIPAGER_HOME": str(tmp_path / "state")})
    port.add_session("claude-a", State.READY)
    reader = Person(3, "rita", "read_only", may_prompt=False, may_approve=False,
                    may_manage=False)
    got = await commands.Ask(SendPrompt(reader, "claude-a", "cat ~/.ssh/id_rsa", 5, 42)).run(door(port))
    assert got == Declined(Reason.MAY_NOT_PROMPT)
    assert not port.calls("type_prompt")
    got = await commands.Ask(SendPrompt(ANA, "claude-a", "run the tests", 6, 42)).run(door(port))
    assert got == Typed("claude-a")
    [(args, kwargs)] = port.calls("type_prompt")
    assert args == ("claude-a", "run the tests")
    assert kwargs["note"]["author_label"] == "ana" and kwargs["note"]["role"] == "admin"


def test_a_result_that_does_not_fit_is_refused():
    doc = commands.result_to_json(Changes("claude-a", "x", ("a",)))
    doc["ok"]["result"]["files"] = "a"  # a string where the names go
    with pytest.raises(codec.CodecError):
        commands.result_from_json(doc)
    doc = commands.result_to_json(Declined(Reason.EMPTY))
    doc["ok"]["result"]["reason"] = "because_i_say_so"
    with pytest.raises(codec.CodecError):
        commands.result_from_json(doc)
    doc = commands.result_to_json(Held("claude-a", "task"))
    doc["ok"]["result"]["until"] = "forever"
    with pytest.raises(codec.CodecError):
        commands.result_from_json(doc)
