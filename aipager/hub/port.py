"""``HubPort``: the clients' ``DaemonPort`` on the hub, over the local daemon and the hosts.

A session without ``@`` is the hub machine's own: the hub's service decides for it and
its daemon does it.  ``claude-jim@box`` is host ``box``'s ``claude-jim`` (and ``jim@box``,
or ``jim`` when no other session is called so, its label): the hub's service hands a use
case for it whole to this port (``remote``), which sends it to the host as an
``Ask`` (``commands``); the host's own service decides it with its own sessions and
policy, and its result comes back within the link's timeout, or the host is
unreachable and the result says so ("not delivered to jim@box: box is offline since
12:03").

``sessions`` merges both: the local registry's sessions as they are, then every
host's, labelled ``jim`` when no other session is called so, else ``jim@box``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import typing
from typing import Any, Callable, Iterator, Mapping, Sequence

from aipager import __version__
from aipager.port.model import Author, PromptNote, Session, State
from aipager.port.backend import AnswerKind, DaemonPort, HostView, Outcome, SessionsView, Who
from aipager.port.screen import Dialog, Kind, Seen
from aipager.port.results import Diff
from aipager.hub import commands, names, transfer, usecases
from aipager.hub.link import HubLink
from aipager.port.commands import (AnswerForm, AnswerQuestion, AnswerRequest, Command,
                                   CompactSession, KillSession, OnSession, QuestionAnswer,
                                   ResumeSession, SendPrompt, ShowChanges, StartSession, StopTask,
                                   SwitchModel, TrustFolder)
from aipager.port.forms import FormAction
from aipager.port.results import Declined, Failed, Result
from aipager.port.rights import Reason
from aipager.proto import errors

log = logging.getLogger("aipager.hub")

PREFIX = "claude-"


class MergedSessions:
    """The local registry and the hosts' sessions, read only (``SessionsView``)."""

    def __init__(self, local: SessionsView, link: HubLink) -> None:
        self._local = local
        self._link = link

    def _labelled(self) -> list[Session]:
        remote = self._link.view.sessions()
        counts: dict[str, int] = {}
        live_local = [s for s in self._local if s.state != State.GONE]
        for s in live_local:
            counts[s.label.lower()] = counts.get(s.label.lower(), 0) + 1
        for s in remote:
            if s.state != State.GONE:
                bare = _bare_label(s)
                counts[bare.lower()] = counts.get(bare.lower(), 0) + 1
        for s in remote:
            bare = _bare_label(s)
            _, host = names.split(s.name)
            alone = counts.get(bare.lower(), 0) <= (0 if s.state == State.GONE else 1)
            s.label = bare if alone else f"{bare}@{host}"
        return remote

    def __iter__(self) -> Iterator[Session]:
        yield from self._local
        yield from self._labelled()

    def get(self, name: str) -> Session | None:
        bare, host = names.split(name)
        if host is None:
            return self._local.get(name)
        self._labelled()
        return self._link.view.get(name)

    def clock(self) -> float:
        return self._local.clock()

    @property
    def version(self) -> Any:
        return getattr(self._local, "version", None)


def _bare_label(sess: Session) -> str:
    return sess.label.split("@", 1)[0]


class HubPort:
    """Args:
        local: the hub machine's own daemon.
        link: the hub's link to the hosts.
    """

    def __init__(self, local: DaemonPort, link: HubLink) -> None:
        self.local = local
        self.link = link
        self.env: Mapping[str, str] = local.env
        self.started_at: float = local.started_at
        self._sessions = MergedSessions(local.sessions, link)
        link.label_of = self._label_of
        #: (host, file id) of every file from the phone sent to a host already → when it
        #: should be there at the latest (``time.monotonic``)
        self._shipped: dict[tuple[str, str], float] = {}

    def _label_of(self, name: str) -> str | None:
        sess = self._sessions.get(name)
        return sess.label if sess is not None else None

    @property
    def sessions(self) -> MergedSessions:
        return self._sessions

    @property
    def stopping(self) -> bool:
        """The hub's own daemon shuts down."""
        return self.local.stopping

    # -- where a name goes -------------------------------------------------------------

    def _label_host(self, label: str) -> tuple[str, str | None]:
        """``jim@box`` → (``jim``, ``box``); a label a host's session alone shows (``jim``)
        → that host; a local session's label → (label, None)."""
        bare, host = names.split(label)
        if host is not None:
            return bare, host
        key = label.lower()
        if any(s.label.lower() == key for s in self.local.sessions):
            return label, None
        found = [s for s in self._sessions._labelled() if s.label.lower() == key]
        if len(found) == 1:
            bare_name, host = names.split(found[0].name)
            return bare_name.removeprefix(PREFIX), host
        return label, None

    # -- a host's sessions: decided there (``daemon.port.Remote``) ------------------------

    @property
    def remote(self) -> HubPort:
        return self

    def route(self, command: Command) -> tuple[str, Command] | None:
        """The host ``command``'s session is on and the command naming it as the host does
        (``claude-jim``, or ``jim`` for a new one); None: this machine's."""
        if isinstance(command, StartSession):
            bare, host = names.split(command.name)
            if host is None or host == self.link.local_name:
                return None
            return host, dataclasses.replace(command, name=bare)
        if not isinstance(command, OnSession):
            return None  # the team's (roles, invites) and files kept for a prompt: the hub's own
        bare, host = self._label_host(command.session)
        if host is None or host == self.link.local_name:
            return None
        return host, dataclasses.replace(command, session=bare)

    async def ask(self, machine: str, command: Command) -> Result:
        """``command`` decided and done by ``machine``'s own service; a host that cannot
        be reached, or fails, is the result's ``Failed`` (nothing was done there)."""
        files: dict[str, str] = {}
        timeout = None
        other = self._other_version(machine)
        if other:  # (its service would not know the command: it would never answer)
            return _failed(command, machine, other)
        try:
            if isinstance(command, SendPrompt):
                files, timeout = self._ship(machine, command.text)
                if command.submitting is not None:
                    command.submitting()  # the host types it: its Enter is not seen here
            got = await self.link.call(machine, commands.Ask(command, files), timeout=timeout)
        except errors.InvalidSessionName:
            raise  # a name that is none: each surface words it with examples
        except (errors.AipagerError, ValueError) as exc:
            return _failed(command, machine, str(exc))
        if not isinstance(got, usecases.RESULT_TYPES):
            return _failed(command, machine, f"{machine} answered with {type(got).__name__}",
                           cause="other")
        return qualified(typing.cast(Result, got), machine)

    def _other_version(self, host: str) -> str:
        """Why ``host`` cannot be asked: it runs another minor release of aipager than this
        hub ("": the same release line, 0.1.x with 0.1.y, or not said yet: a host the hub
        knows only from an output has sent no snapshot naming its version)."""
        h = self.link.view.hosts.get(host)
        if h is None or not h.online() or h.snapshot_stamp == (0, 0) \
                or _line(h.version) == _line(__version__):
            return ""  # (offline, unknown: the link says so in its own words)
        theirs = f"aipager {h.version}" if h.version else "an older aipager"
        return (f"{host} runs {theirs} and this hub aipager {__version__}: upgrade them "
                "together")

    def _ship(self, host: str, text: str) -> tuple[dict[str, str], float | None]:
        """Send ``host`` the files from the phone that ``text`` names (once each), ahead of
        the command that names them; returns hub path → file id, for the host to put its
        own paths in their place (``transfer``), and how long that command may take (None:
        the link's own time, nothing was sent).

        Raises:
            HostUnreachable: ``host`` is offline (nothing sent).
            ValueError: a file too big to send.
        """
        found = transfer.inbox_paths(self.env, text)
        if not found:
            return {}, None
        self.link.check_online(host)
        files: dict[str, str] = {}
        now = time.monotonic()
        arrived = now  # when the last of the files should be on the host
        for path in found:
            fid = transfer.file_id(path)
            files[path] = fid
            if (host, fid) not in self._shipped:
                # every piece has time for all before it: the last is taken after the rest
                arrived = max(arrived, now) + transfer.time_for(os.path.getsize(path))
                for part, parts, data in transfer.pieces(path):
                    self.link.send(host, commands.PutFile(fid, os.path.basename(path), part,
                                                          parts, data,
                                                          transfer.person_of(path)),
                                   timeout=self.link.timeout + arrived - now)
                self._shipped[(host, fid)] = arrived
            arrived = max(arrived, self._shipped[(host, fid)])
        late = arrived - time.monotonic()
        return files, self.link.timeout + late if late > 0 else None

    # -- this machine's sessions (the service routes a host's away first) --------------

    def queue_chat_message(self, session: str, msg_id: int | str, text: str, *,
                           chat_id: int | str = "", sender: str = "", held: bool = False,
                           held_for: str = "task", author: Author | None = None) -> None:
        self.local.queue_chat_message(session, msg_id, text, chat_id=chat_id, sender=sender,
                                      held=held, held_for=held_for, author=author)

    def drop_chat_message(self, session: str, msg_id: int | str) -> None:
        self.local.drop_chat_message(session, msg_id)

    async def answer_request(self, session: str, key: str, kind: AnswerKind, who: Who, *,
                             reason: str = "", suggestion: int | None = None,
                             edit: str | None = None) -> Outcome:
        return await self.local.answer_request(session, key, kind, who, reason=reason,
                                               suggestion=suggestion, edit=edit)

    async def answer_question(self, session: str, key: str, who: Who,
                              answers: Sequence[QuestionAnswer] | None) -> Outcome:
        return await self.local.answer_question(session, key, who, answers)

    async def answer_form(self, session: str, key: str, who: Who, action: FormAction,
                          content: Mapping[str, Any]) -> Outcome:
        return await self.local.answer_form(session, key, who, action, content)

    async def start_session(self, label: str, *, resume_id: str = "", cwd: str = "",
                            mode: str = "", agent: str = "") -> str:
        bare, _host = names.split(label)  # (``NAME@<this hub>``: the route left it here)
        return await self.local.start_session(bare, resume_id=resume_id, cwd=cwd, mode=mode,
                                              agent=agent)

    async def stop_session(self, session: str) -> bool:
        return await self.local.stop_session(session)

    async def kill_session(self, label: str) -> bool:
        return await self.local.kill_session(names.split(label)[0])

    async def session_changes(self, session: str, *, role: str,
                              user_id: int | None) -> Diff:
        return await self.local.session_changes(session, role=role, user_id=user_id)

    async def switch_model(self, session: str, model: str) -> None:
        await self.local.switch_model(session, model)

    async def type_prompt(self, session: str, text: str, *, note: PromptNote,
                          submitting: Callable[[], None] | None = None) -> None:
        await self.local.type_prompt(session, text, note=note, submitting=submitting)

    async def type_text(self, session: str, text: str) -> None:
        await self.local.type_text(session, text)

    async def screen(self, session: str, wait: float = 0.0) -> Seen:
        return await self.local.screen(session, wait)

    async def answer_dialog(self, session: str, kind: Kind,
                            pick: Callable[[Dialog], int]) -> bool:
        return await self.local.answer_dialog(session, kind, pick)

    # -- the rest ----------------------------------------------------------------------

    def audit_action(self, action: str, who: Who, **fields: Any) -> None:
        """Audited where the person acted: the hub's audit log (a host's own service audits
        what it did in the host's)."""
        self.local.audit_action(action, who, **fields)

    def set_previews(self, on: bool) -> None:
        # hosts always make previews; the chat shows them where a chat turned them on
        self.local.set_previews(on)

    def add_facts(self, facts: Callable[[], dict[str, Any]]) -> None:
        self.local.add_facts(facts)

    def hosts(self) -> Sequence[HostView]:
        """The hub machine first, then every host by name, each online or since when not."""
        local = HostView(self.link.local_name or "this machine", local=True)
        return [local, *(HostView(name, online=h.online(), last_seen=h.last_seen)
                         for name, h in sorted(self.link.view.hosts.items()))]


#: what a command did not do, when its host could not be asked (``Failed.doing``): the
#: commands a hub sends to a host (the team's and the files' stay with the hub, ``route``)
_DOING: dict[type, Any] = {
    SendPrompt: "deliver", AnswerRequest: "answer", AnswerQuestion: "answer",
    AnswerForm: "answer",
    StartSession: "start", StopTask: "stop", KillSession: "end", TrustFolder: "answer",
    ShowChanges: "diff", CompactSession: "compact", SwitchModel: "model",
    ResumeSession: "resume"}
#: reasons whose subject names a session (a host's: named with its host on the hub)
_SESSION_SUBJECTS = frozenset({
    Reason.NOT_RUNNING, Reason.NOT_WORKING, Reason.TRUST_FIRST, Reason.NO_TRUST_DIALOG,
    Reason.FOLDER_UNKNOWN, Reason.ALREADY_RUNNING, Reason.NOT_ENDED})


def _failed(command: Command, host: str, error: str, cause: Any = "session") -> Failed:
    """``command`` (one ``route`` sends to a host) not done on ``host``, for ``error``: named
    by its session as the hub names it."""
    name = command.name if isinstance(command, StartSession) else \
        command.session if isinstance(command, OnSession) else ""
    return Failed(error, names.qualify(name, host), _DOING[type(command)], cause)


def qualified(result: Result, host: str) -> Result:
    """``result`` of ``host``'s service with its sessions named as the hub names them
    (``claude-jim`` → ``claude-jim@box``)."""
    if isinstance(result, Declined):
        if result.reason in _SESSION_SUBJECTS and result.subject:
            return dataclasses.replace(result, subject=names.qualify(result.subject, host))
        return result
    record: Any = result  # (each arm of the union has one of the two)
    for name in ("session", "name"):
        value = getattr(record, name, None)
        if isinstance(value, str) and value:
            return typing.cast(Result, dataclasses.replace(record, **{name: names.qualify(
                value, host)}))
    return result


def offline_since(link: HubLink, host: str) -> str:
    """``12:03`` when ``host`` went quiet, "" while it is online."""
    h = link.view.hosts.get(host)
    if h is None or h.online() or not h.last_seen:
        return ""
    return time.strftime("%H:%M", time.localtime(h.last_seen))


def _line(version: str) -> tuple[str, ...] | None:
    """A release's line (``0.1.3`` → ``("0", "1")``): releases of one line read each
    other's records (``tests/hub/test_wire_versions.py``); None for none said."""
    parts = version.split(".")
    return tuple(parts[:2]) if len(parts) >= 2 and all(parts[:2]) else None
