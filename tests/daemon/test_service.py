"""The service's use cases over the port double (``fakes.port.FakePort``): each decides the
right once and answers with a typed result, whichever surface asks."""

from __future__ import annotations

import dataclasses
import os

import orjson
import pytest
from fakes.port import FakePort

from aipager.clients.words import words
from aipager.daemon.registry import Registry
from aipager.port.model import Author, State
from aipager.daemon.service import Service
from aipager.port.commands import CompactSession, ResumeSession, SendPrompt, SwitchModel
from aipager.port.results import Compacting, Declined, Failed, Held, Resumed, Switching, Typed
from aipager.port.rights import Reason
from aipager.port.who import NOBODY, Person
from aipager.proto.errors import SessionError

OWNER = Person(1, "owner", "owner", exempt=True, never_held=True)
MEMBER = Person(2, "ana", "user", may_manage=False, may_approve=False)
READER = Person(3, "rita", "read_only", may_prompt=False, may_approve=False, may_manage=False)


@pytest.fixture
def port(tmp_path):
    port = FakePort(dict(os.environ))
    port.add_session("claude-jim", State.READY)
    return port


def _service(port) -> Service:
    return Service(port, lambda: os.environ["HOME"])


async def test_compact_needs_the_right_to_prompt_and_a_running_session(port):
    service = _service(port)
    assert await service.ask(CompactSession(MEMBER, "jim")) == Compacting("claude-jim")
    assert port.calls("type_text") == [(("claude-jim", "/compact"), {})]
    refused = await service.ask(CompactSession(READER, "jim"))
    assert refused == Declined(Reason.MAY_NOT_PROMPT)
    port.add_session("claude-old", State.GONE)
    assert await service.ask(CompactSession(OWNER, "old")) == Declined(Reason.NOT_RUNNING,
                                                                        "claude-old")
    assert len(port.calls("type_text")) == 1
    assert words(Compacting("claude-jim")) == "📦 /compact sent to jim."


async def test_switching_the_model_is_an_admins_and_takes_a_model_name(port):
    service = _service(port)
    assert await service.ask(SwitchModel(MEMBER, "jim", "opus")) == Declined(Reason.ADMIN_ONLY)
    odd = await service.ask(SwitchModel(OWNER, "jim", "opus; rm -rf ~"))
    assert odd == Declined(Reason.NO_MODEL, "opus; rm -rf ~")
    assert port.calls("switch_model") == []
    assert await service.ask(SwitchModel(OWNER, "jim", "opus")) == Switching("claude-jim", "opus")
    assert port.calls("switch_model") == [(("claude-jim", "opus"), {})]
    (audited,) = [c for c in port.calls("audit_action") if c[0][0] == "model_switch"]
    assert audited[1] == {"session": "claude-jim", "model": "opus"}


async def test_resume_starts_an_ended_conversation_in_its_folder(port, tmp_path):
    service = _service(port)
    port.add_session("claude-old", State.GONE)
    old = port.sessions.get("claude-old")
    assert await service.ask(ResumeSession(OWNER, "old")) == Declined(Reason.NOT_ENDED,
                                                                       "claude-old")
    old.claude_session_id, old.cwd = "sid-old", str(tmp_path)
    assert await service.ask(ResumeSession(MEMBER, "old")) == Declined(Reason.ADMIN_ONLY)
    assert await service.ask(ResumeSession(OWNER, "old")) == Resumed("claude-old", str(tmp_path))
    ((label,), kw), = port.calls("start_session")
    assert (label, kw["resume_id"], kw["cwd"]) == ("old", "sid-old", str(tmp_path))
    # its folder gone: the default one
    old.cwd = str(tmp_path / "gone")
    again = await service.ask(ResumeSession(OWNER, "old"))
    assert again == Resumed("claude-old", os.environ["HOME"])
    # a running one is not resumed over
    live = port.sessions.get("claude-jim")
    live.claude_session_id, live.socket_seen = "sid-jim", True
    assert await service.ask(ResumeSession(OWNER, "jim")) == Declined(Reason.ALREADY_RUNNING,
                                                                       "jim")


async def test_a_failure_of_the_daemon_is_said_with_the_session(port):
    def fail(name, args, kwargs):
        if name == "switch_model":
            raise SessionError("dtach exited with status 1")
    port.handler = fail
    result = await _service(port).ask(SwitchModel(OWNER, "jim", "sonnet"))
    assert result == Failed("dtach exited with status 1", "claude-jim", "model")
    assert words(result) == "Cannot switch jim: dtach exited with status 1"


async def test_an_edited_call_goes_to_the_port_only_with_an_allow_and_the_right(port):
    from aipager.port.commands import AnswerRequest

    service = _service(port)
    await service.ask(AnswerRequest(OWNER, "claude-jim", "p:t1:", "allow", edit="make test"))
    await service.ask(AnswerRequest(OWNER, "claude-jim", "p:t1:", "deny", reason="no",
                                    edit="rm -rf /"))
    [(allow_args, allow_kw), (deny_args, deny_kw)] = port.calls("answer_request")
    assert allow_args[2] == "allow" and allow_kw["edit"] == "make test"
    assert deny_args[2] == "deny" and "edit" not in deny_kw and deny_kw["reason"] == "no"

    # a reader's edit (a message after a ✏️ tapped before their role changed) asks nothing
    got = await service.ask(AnswerRequest(READER, "claude-jim", "p:t1:", "allow", edit="ls"))
    assert got == Declined(Reason.MAY_NOT_ANSWER)
    assert len(port.calls("answer_request")) == 2


async def test_a_held_message_goes_in_with_the_author_the_daemon_kept(port):
    """A member's message waits for another person's task; its release names nobody (no
    surface keeps authors), and it is typed with the member's role and reply, read from
    the held message the daemon kept, also after the daemon's state was saved and read
    back."""
    service = _service(port)
    sess = port.registry.get("claude-jim")
    port.registry.open_task(sess, prompt="refactor")
    sess.task.authors = [{"user_id": OWNER.user_id, "label": "owner"}]
    port.registry.set_state(sess, State.WORKING)
    reply = {"text": "the parser", "sent_at": 1.0}
    got = await service.ask(SendPrompt(MEMBER, "claude-jim", "add a test", 7, 42, reply_to=reply))
    assert isinstance(got, Held) and got.until == "task"
    assert not port.calls("type_prompt")
    # the daemon restarts: its registry saved and read back
    saved = orjson.loads(orjson.dumps(port.registry.to_state()))
    port.registry = Registry()
    port.registry.restore(saved)
    [kept] = port.registry.get("claude-jim").queue
    assert kept.author == Author(MEMBER.user_id, "ana", "user", reply)
    port.registry.set_state(port.registry.get("claude-jim"), State.READY)
    got = await service.ask(SendPrompt(NOBODY, "claude-jim", "add a test", 7, 42, queued=True))
    assert got == Typed("claude-jim")
    [(_args, kwargs)] = port.calls("type_prompt")
    note = kwargs["note"]
    assert (note["author_user_id"], note["author_label"], note["role"]) == (2, "ana", "user")
    assert note["reply_to"] == reply


async def test_a_release_the_daemon_kept_no_author_for_goes_in_with_the_floors_role(port):
    """A message held by an older version (no author kept) is typed as a ``user``'s, never
    with the rights of whoever asks for its release."""
    port.registry.queue_message("claude-jim", "8", "old one", chat_id="42", held=True)
    saved = port.registry.to_state()
    saved[0]["queued_messages"][0] = {**dataclasses.asdict(saved[0]["queued_messages"][0]),
                                      "author": "not a record"}
    port.registry = Registry()
    port.registry.restore(saved)
    assert port.registry.get("claude-jim").queue[0].author is None
    got = await _service(port).ask(SendPrompt(OWNER, "claude-jim", "old one", 8, 42, queued=True))
    assert got == Typed("claude-jim")
    [(_args, kwargs)] = port.calls("type_prompt")
    assert kwargs["note"]["role"] == "user" and kwargs["note"]["author_user_id"] is None


async def test_files_for_a_prompt_are_kept_in_their_senders_own_folder_and_a_reader_keeps_none(port):
    from aipager import files
    from aipager.port.commands import KeepFiles
    from aipager.port.results import FilesKept

    service = _service(port)
    kept = await service.ask(KeepFiles(MEMBER, (("notes.txt", b"hi"), ("../x.sh", b"#!")),
                                       "claude-jim", "page"))
    assert isinstance(kept, FilesKept) and len(kept.paths) == 2
    assert {os.path.dirname(p) for p in kept.paths} == {files.inbox_dir(port.env, MEMBER.user_id)}
    assert [open(p, "rb").read() for p in kept.paths] == [b"hi", b"#!"]
    (audited,) = [c for c in port.calls("audit_action") if c[0][0] == "page_upload"]
    assert audited[1] == {"session": "claude-jim", "files": 2}
    assert await service.ask(KeepFiles(READER, (("a.txt", b"x"),))) == \
        Declined(Reason.MAY_NOT_PROMPT)
    assert not os.path.exists(files.inbox_dir(port.env, READER.user_id))
    assert await service.ask(KeepFiles(MEMBER, ())) == Declined(Reason.NO_FILE)
