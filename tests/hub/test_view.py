"""The hub's view of its hosts (no broker): newest statement wins, labels get ``@host``
only when a name is ambiguous, ``/status`` grouped by host, an offline host said."""

from __future__ import annotations

import os
import time

import pytest
from fakes.sessionio import FakeSessions

from aipager.daemon.model import Session, State
from aipager.daemon.notifier import Files, Notice, RecordingNotifier
from aipager.hub import codec
from aipager.hub.creds import Creds
from aipager.hub.link import HubLink, as_hub_output
from aipager.hub.port import HubPort


def doc(name, state=State.READY, **kw):
    """A host's session as the hub reads it off the broker (``codec``)."""
    return codec.session_from_json(codec.session_to_json(
        Session(f"claude-{name}", name, 1.0, state=state, **kw)))


@pytest.fixture
def hub():
    from aipager.daemon.app import Daemon

    env = dict(os.environ)
    local = Daemon(env, session_io=FakeSessions())
    link = HubLink(env, "nats://127.0.0.1:1", Creds("hub", "x"), RecordingNotifier(),
                   local_name="laptop", hosts=lambda: ["box", "vm", "late"])
    return local, link, HubPort(local, link)


def test_the_newest_statement_about_a_session_wins(hub):
    _, link, port = hub
    link.view.note_snapshot("box", [doc("a", State.WORKING)], (1, 5), time.time())
    link.view.note_session("box", doc("a", State.READY), (1, 4))  # older: ignored
    assert port.sessions.get("claude-a@box").state == State.WORKING
    link.view.note_session("box", doc("a", State.WAITING), (1, 6))
    assert port.sessions.get("claude-a@box").state == State.WAITING
    link.view.note_snapshot("box", [doc("b")], (2, 1), time.time())  # restarted host: a gone
    assert port.sessions.get("claude-a@box") is None
    assert port.sessions.get("claude-b@box").label == "b"


def test_labels_take_the_host_only_when_a_name_is_ambiguous(hub):
    local, link, port = hub
    local.core.registry.ensure("claude-api").state = State.READY
    link.view.note_snapshot("box", [doc("api"), doc("web")], (1, 1), time.time())
    link.view.note_snapshot("vm", [doc("api", State.GONE)], (1, 1), time.time())
    labels = {s.name: s.label for s in port.sessions}
    assert labels == {"claude-api": "api", "claude-api@box": "api@box",
                      "claude-web@box": "web", "claude-api@vm": "api@vm"}


async def test_kill_by_label_goes_where_the_label_points(hub, monkeypatch):
    local, link, port = hub
    link.view.note_snapshot("box", [doc("web")], (1, 1), time.time())
    calls = []

    async def call(host, cmd):
        calls.append((host, cmd))
        return True

    async def local_kill(label):
        calls.append(("local", label))
        return True

    monkeypatch.setattr(link, "call", call)
    monkeypatch.setattr(local, "kill_session", local_kill)
    await port.kill_session("web")
    await port.kill_session("web@box")
    await port.kill_session("nobody")
    await port.kill_session("api@laptop")
    assert [(h, getattr(c, "label", c)) for h, c in calls] == [
        ("box", "web"), ("box", "web"), ("local", "nobody"),
        ("local", "api")]


def test_status_groups_sessions_by_host_and_says_who_is_offline(hub):
    local, link, port = hub
    local.core.registry.ensure("claude-mine").state = State.WORKING
    link.view.note_snapshot("box", [doc("api")], (1, 1), time.time())
    link.view.note_snapshot("vm", [doc("web", State.WAITING)], (1, 1), time.time() - 600)
    from aipager.bot import view

    text = view.status_screen(list(port.sessions), None, time.time(), port.hosts())
    vm_since = time.strftime("%H:%M", time.localtime(link.view.hosts["vm"].last_seen))
    lines = text.splitlines()
    assert [line.split(" · ")[0] for line in lines] == [
        "Sessions:", "🖥 laptop (this machine)", "  ⏳ mine",
        "🖥 box", "  ✅ api",
        "🖥 vm", "  🔐 web"], lines
    assert lines[5] == f"🖥 vm · offline since {vm_since}"
    assert " · working" in lines[2] and " · ready" in lines[4]


async def test_a_command_for_an_offline_or_unknown_host_fails_at_once(hub):
    from aipager.hub.commands import HostUnreachable

    _, link, port = hub
    link.view.note_snapshot("vm", [doc("web")], (1, 1), time.time() - 600)
    with pytest.raises(HostUnreachable, match="vm is offline since"):
        await port.type_text("claude-web@vm", "hi")
    with pytest.raises(HostUnreachable, match="late has not joined yet"):
        await port.stop_session("claude-x@late")
    with pytest.raises(HostUnreachable, match="nope is not a host of this hub"):
        await port.stop_session("claude-x@nope")


def test_files_stay_on_their_host_and_the_chat_is_told():
    out = as_hub_output(Files("claude-a", "cap", files=["/h/shot.png"], task=1), "box")
    assert isinstance(out, Notice) and out.session == "claude-a@box"
    assert "shot.png" in out.text and "stay on box" in out.text


class Msg:
    def __init__(self, subject, doc):
        self.subject = subject
        self.data = codec.dumps(doc) if not isinstance(doc, bytes) else doc


def record(kind, seq, epoch="e1", **kw):
    return {"type": kind, "seq": seq, "epoch": epoch, "stamp": [1, seq], **kw}


def notice(text):
    return {"kind": "notice", "session": "claude-a", "text": text, "notice": "api_error"}


def test_records_are_taken_once_per_host_epoch_and_number(hub):
    _, link, _ = hub
    shown = link.notifier
    bad = []
    for msg in (Msg("aipager.box.out", record("output", 1, out=notice("one"))),
                Msg("aipager.box.out", record("output", 1, out=notice("one again"))),
                Msg("aipager.vm.out", record("output", 1, out=notice("vm one"))),
                Msg("aipager.box.out", b"not json"),
                Msg("aipager.box.out", record("output", 2, out={"kind": "nope"})),
                Msg("aipager.box.out", record("output", 1, epoch="e2", out=notice("new epoch")))):
        bad.append(link._take_one(msg))
    assert [(o.session, o.text) for o in shown.outputs] == [
        ("claude-a@box", "one"), ("claude-a@vm", "vm one"), ("claude-a@box", "new epoch")]
    assert link.counters["repeats_skipped"] == 1
    assert [b is not None for b in bad] == [False, False, False, True, True, False]  # set aside
    link._save_taken()
    again = HubLink(link.env, link.url, link.creds, RecordingNotifier())
    again._take_one(Msg("aipager.box.out", record("output", 1, epoch="e2", out=notice("x"))))
    assert list(again.notifier.outputs) == []  # remembered across a restart


async def test_an_answer_counts_only_from_the_host_the_command_went_to(hub):
    import asyncio

    _, link, _ = hub
    future = asyncio.get_running_loop().create_future()
    link._waiting["hub:x:1"] = ("box", future)
    bad = link._take_one(Msg("aipager.vm.out", record("reply", 1, id="hub:x:1", ok=True)))
    assert not future.done() and bad == "an answer to a command sent to box"  # set aside
    link._take_one(Msg("aipager.box.out", record("reply", 1, id="hub:x:1", ok=True)))
    assert future.result().value is True
