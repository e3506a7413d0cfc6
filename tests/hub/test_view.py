"""The hub's view of its hosts (no broker): newest statement wins, labels get ``@host``
only when a name is ambiguous, ``/status`` grouped by host, an offline host said."""

from __future__ import annotations

import os
import time

import pytest
from fakes.sessionio import FakeSessions

from aipager.port.model import Session, State
from aipager.port.outputs import FileRefusal, Files, Notice, RecordingNotifier
from aipager.hub import codec
from aipager.hub.creds import Creds
from aipager.hub.link import HubLink, as_hub_output
from aipager.hub.port import HubPort
from aipager.port.commands import KillSession, SendPrompt, StartSession, StopTask
from aipager.port.results import Declined, Failed, Gone, Started, Typed
from aipager.port.rights import Reason
from aipager.port.who import Person

OWNER = Person(1, "owner", "owner", exempt=True, never_held=True)


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


def test_a_use_case_goes_where_its_session_or_label_points(hub):
    local, link, port = hub
    link.view.note_snapshot("box", [doc("web")], (1, 1), time.time())
    local.core.registry.ensure("claude-mine").state = State.READY

    def routed(command):
        got = port.route(command)
        return None if got is None else (got[0], getattr(got[1], "session", None)
                                         or got[1].name)

    assert routed(KillSession(OWNER, "web")) == ("box", "web")  # the label a host's alone has
    assert routed(KillSession(OWNER, "web@box")) == ("box", "web")
    assert routed(StopTask(OWNER, "claude-web@box")) == ("box", "claude-web")
    assert routed(KillSession(OWNER, "nobody")) is None
    assert routed(SendPrompt(OWNER, "claude-mine", "hi", 1, 2)) is None
    assert routed(KillSession(OWNER, "api@laptop")) is None  # the hub's own name
    assert routed(StartSession(OWNER, "new@box")) == ("box", "new")
    assert routed(StartSession(OWNER, "new@laptop")) is None
    assert routed(StartSession(OWNER, "new")) is None


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
        "🖥 vm", "  ❔ web"], lines
    assert lines[5] == f"🖥 vm · offline since {vm_since}"
    assert lines[6] == "  ❔ web · unreachable"  # not "🔐 waiting": nothing reaches it now
    assert " · working" in lines[2] and " · ready" in lines[4]


async def test_a_use_case_for_an_offline_or_unknown_host_fails_at_once(hub):
    from aipager.daemon.service import Service

    _, link, port = hub
    link.view.note_snapshot("vm", [doc("web")], (1, 1), time.time() - 600)
    service = Service(port, lambda: os.environ["HOME"])
    got = await service.ask(SendPrompt(OWNER, "claude-web@vm", "hi", 1, 2))
    assert isinstance(got, Failed) and got.session == "claude-web@vm"
    assert "vm is offline since" in got.error and got.doing == "deliver"
    got = await service.ask(StopTask(OWNER, "claude-x@late"))
    assert isinstance(got, Failed) and "late has not joined yet" in got.error
    assert got.doing == "stop"
    got = await service.ask(StartSession(OWNER, "x@nope"))
    assert isinstance(got, Failed) and "nope is not a host of this hub" in got.error
    assert (got.session, got.doing) == ("x@nope", "start")


def test_a_hosts_result_names_its_sessions_as_the_hub_does():
    from aipager.hub.port import qualified

    assert qualified(Typed("claude-a"), "box") == Typed("claude-a@box")
    assert qualified(Started("claude-a", "/w"), "box") == Started("claude-a@box", "/w")
    assert qualified(Declined(Reason.NOT_RUNNING, "claude-a"), "box") == \
        Declined(Reason.NOT_RUNNING, "claude-a@box")
    assert qualified(Declined(Reason.NO_FOLDER, "/w"), "box") == Declined(Reason.NO_FOLDER, "/w")
    assert qualified(Declined(Reason.MAY_NOT_PROMPT), "box") == Declined(Reason.MAY_NOT_PROMPT)
    assert qualified(Gone(), "box") == Gone()


def test_files_stay_on_their_host_and_the_chat_is_told():
    out = as_hub_output(Files("claude-a", "cap", files=["/h/shot.png"], task=1), "box")
    assert isinstance(out, Notice) and out.session == "claude-a@box"
    assert out.text == "📎 a@box sent 1 file that stays on box: shot.png"


def test_a_file_the_hosts_check_refused_is_said_refused_not_kept_on_the_host():
    out = as_hub_output(Files("claude-a", "cap", files=["/h/shot.png", "/h/.env"], task=1,
                              refused=[FileRefusal("/h/.env", "secret", "looks like a secret")]),
                        "box")
    assert isinstance(out, Notice)
    kept, refused = out.text.split("\n")
    assert kept == "📎 a@box sent 1 file that stays on box: shot.png"
    assert refused == "📎 a@box · 1 file not sent: .env: looks like a secret"


def test_a_hosts_files_are_said_in_the_chats_language():
    # (the hub words it in English; each chat words it again from what the notice carries:
    # this once raised on the names the notice carried, and the notice was lost)
    from aipager.bot import i18n
    from aipager.texts import render

    out = as_hub_output(Files("claude-a", "cap", files=["/h/shot.png", "/h/.env"], task=1,
                              refused=[FileRefusal("/h/.env", "secret", "looks like a secret")]),
                        "box")
    with i18n.use("pt_BR"):
        said = render.notice(out.notice, "a@box", out.extra)
    assert said is not None and "shot.png" in said and ".env" in said
    assert said != out.text and "box" in said


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


def test_a_hosts_output_is_a_sign_of_life_as_of_when_the_broker_stored_it(hub):
    """A session the hub learnt of from an output, before the host's first snapshot: its
    host is online (a prompt for it was refused "has not joined yet", seen on a loaded
    CI run); an output stored long ago and read late says nothing of now."""
    import datetime
    from types import SimpleNamespace

    from aipager.hub.commands import HostUnreachable

    _, link, _ = hub

    def stored(subject, doc, ago):
        msg = Msg(subject, doc)
        at = datetime.datetime.fromtimestamp(time.time() - ago, datetime.timezone.utc)
        msg.metadata = SimpleNamespace(timestamp=at)
        return msg

    with pytest.raises(HostUnreachable, match="has not joined yet"):
        link.check_online("box")
    assert link._take_one(stored("aipager.box.out", record("output", 1, out=notice("hi")), 0.5)) \
        is None
    link.check_online("box")  # online now
    link._take_one(stored("aipager.vm.out", record("output", 1, out=notice("old")), 3600))
    with pytest.raises(HostUnreachable, match="offline since"):
        link.check_online("vm")


async def test_an_answer_counts_only_from_the_host_the_command_went_to(hub):
    import asyncio

    _, link, _ = hub
    future = asyncio.get_running_loop().create_future()
    link._waiting["hub:x:1"] = ("box", future)
    bad = link._take_one(Msg("aipager.vm.out", record("reply", 1, id="hub:x:1", ok=True)))
    assert not future.done() and bad == "an answer to a command sent to box"  # set aside
    link._take_one(Msg("aipager.box.out", record("reply", 1, id="hub:x:1", ok=True)))
    assert future.result().value is True


async def test_a_host_of_another_version_is_not_asked_and_the_words_say_why(hub):
    """A host names its aipager in each snapshot; one that runs another (or too old to
    name it) would not know the hub's commands and never answer: nothing is sent, and the
    person reads why at once instead of a timeout."""
    from aipager import __version__
    from aipager.daemon.service import Service

    _, link, port = hub
    sent = []
    link.send = lambda *a, **k: sent.append(a)  # (nothing may reach the broker)

    async def call(*a, **k):
        sent.append(a)

    link.call = call
    service = Service(port, lambda: os.environ["HOME"])
    link.view.note_snapshot("box", [doc("web")], (1, 1), time.time(), version="0.0.9")
    got = await service.ask(SendPrompt(OWNER, "claude-web@box", "hi", 1, 2))
    assert isinstance(got, Failed) and got.session == "claude-web@box"
    assert got.error == f"box runs aipager 0.0.9 and this hub aipager {__version__}: " \
                        "upgrade them together"
    link.view.note_snapshot("box", [doc("web")], (1, 2), time.time(), version="")
    got = await service.ask(StopTask(OWNER, "claude-web@box"))
    assert isinstance(got, Failed) and "box runs an older aipager" in got.error
    assert sent == []
    # a release of the same line (0.1.x with 0.1.y) is asked: they read each other's records
    major, minor = __version__.split(".")[:2]
    link.view.note_snapshot("box", [doc("web")], (1, 3), time.time(), version=f"{major}.{minor}.99")
    await service.ask(StopTask(OWNER, "claude-web@box"))
    assert sent, "a host of the same release line was not asked"
    sent.clear()
    link.view.note_snapshot("box", [doc("web")], (1, 4), time.time(), version=__version__)
    await service.ask(StopTask(OWNER, "claude-web@box"))
    assert len(sent) == 1  # the same version: asked
