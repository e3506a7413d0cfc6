"""The use cases, once, under every surface: ``Service.ask(command) -> result``.

The chat, the page, voice and a hub's hosts build a command of ``aipager.port`` naming
who asks; this module checks that person's rights (``port.rights.check``, the only place
a right is decided), does the work through the daemon's port and answers with a typed
result the surface renders (``clients.words``).  It holds no state of its own: what it
reads (sessions, their tasks' authors, the folders Claude Code trusts) is read afresh for
every command.

A prompt goes in one way whichever surface sent it: the empty one is declined, a session
whose screen shows its folder trust dialog is never typed into (the keys would answer the
dialog), another person's running task or a dialog open on the screen holds it in the
daemon, else it is typed with its permission note (``policy.notes``: sender, role, the
exact encoding) and audited.  What is up is read off the session's real screen
(``daemon.screen``), never guessed from state.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from typing import Any, Callable, Mapping, Sequence

from aipager import config, dtach, files, labels
from aipager.agents import AGENTS, CLAUDE
from aipager.chatcommands import RESERVED
from aipager import folders
from aipager.port.model import Author, PromptNote, Session, State, task_authors
from aipager.port.backend import DaemonPort, HostView, SessionsView
from aipager.daemon.screen import Dialog, Kind, trust_choice
from aipager.texts.render import author_label
from aipager.policy import chatprompt
from aipager.port.commands import (AnswerForm, AnswerQuestion, AnswerRequest, AssignRole, Command,
                                   CompactSession, InviteAs, JoinTeam, KeepFiles, KillSession, Mode,
                                   ReadAudit, ResumeSession, SendPrompt, ShowChanges, StartSession,
                                   StopTask, SwitchModel, TrustFolder)
from aipager.port.results import (AuditRecords, Changes, Compacting, Declined, Ended, Failed,
                                  FileNotKept, FilesKept, Gone, Held, Invitation, Joined, Result,
                                  Resumed, RoleGiven, Started, Stopping, Switching, Trusted, Typed)
from aipager.port.rights import Reason, check, check_assign
from aipager.port.who import NOBODY, Person, Who
from aipager.daemon import audit, invites, people
from aipager.proto import paths
from aipager.proto.errors import AipagerError, ConfigError, SessionError, SessionNotFound

#: a model Claude Code's /model takes: an alias (``opus``) or an id (``claude-sonnet-4-5``)
MODEL_NAME = re.compile(r"[A-Za-z0-9._\[\]-]{1,64}")
#: the most audit records one read returns
AUDIT_MOST = 500
#: how long a message for a session that has not started waits for its screen to show
#: its input line or a dialog
STARTING_WAIT = 15.0
class Service:
    """The use cases over the daemon's port, and the one door (``port.door.Port``) ``main``
    hands every client: ``ask`` and a read-only view of the daemon.

    Args:
        port: the daemon (or a hub's view of several).
        default_folder: where a session starts when no folder is named (asked each time:
            the config can change).
    """

    def __init__(self, port: DaemonPort, default_folder: Callable[[], str]) -> None:
        self.port = port
        self.default_folder = default_folder
        #: the folders Claude Code trusts (read again each time: it trusts more as it runs)
        self.trusted: Callable[[], list[str]] = lambda: folders.read(port.env)

    # -- the read-only view a client holds beside ``ask`` ----------------------------------

    @property
    def sessions(self) -> SessionsView:
        return self.port.sessions

    def hosts(self) -> Sequence[HostView]:
        return self.port.hosts()

    @property
    def env(self) -> Mapping[str, str]:
        return self.port.env

    @property
    def started_at(self) -> float:
        return self.port.started_at

    @property
    def stopping(self) -> bool:
        return self.port.stopping

    def audit_action(self, action: str, who: Who, **fields: Any) -> None:
        self.port.audit_action(action, who, **fields)

    def person(self, user_id: int | None, label: str, role: str, *,
               raw_keys: bool = False) -> Person:
        return people.with_rights(people.load_policy(self.port.env), user_id, label, role,
                                  raw_keys=raw_keys)

    def policy_problem(self) -> str:
        return people.policy_problem(self.port.env)

    def set_previews(self, on: bool) -> None:
        self.port.set_previews(on)

    def add_facts(self, facts: Callable[[], dict[str, Any]]) -> None:
        self.port.add_facts(facts)

    async def ask(self, command: Command) -> Result:
        """Do what ``command`` asks, if its person may; what it came to.

        A command for another machine's session (a hub's host) is that machine's to
        decide: it goes there whole (``port.remote``)."""
        remote = self.port.remote
        if remote is not None:
            routed = remote.route(command)
            if routed is not None:
                return await remote.ask(*routed)
        why = self._refusal(command)
        if why is not None:
            return Declined(why)
        match command:
            case SendPrompt():
                return await self._prompt(command)
            case AnswerRequest():
                return await self._answer(command)
            case AnswerQuestion():
                return await self._question(command)
            case AnswerForm():
                return await self._form(command)
            case StartSession():
                return await self._start(command)
            case StopTask():
                return await self._stop(command)
            case KillSession():
                return await self._kill(command)
            case TrustFolder():
                return await self._trust(command)
            case ShowChanges():
                return await self._changes(command)
            case CompactSession():
                return await self._compact(command)
            case SwitchModel():
                return await self._model(command)
            case ResumeSession():
                return await self._resume(command)
            case AssignRole():
                return self._assign(command)
            case InviteAs():
                return self._invite(command)
            case JoinTeam():
                return self._join(command)
            case KeepFiles():
                return await self._keep(command)
            case ReadAudit():
                records = await asyncio.to_thread(audit.tail, paths.audit_log(self.port.env),
                                                  max(1, min(AUDIT_MOST, command.limit)))
                return AuditRecords(tuple(records))

    def _refusal(self, command: Command) -> Reason | None:
        """The one rights check: the right the command's record names, for its person
        (for answering and stopping, knowing who asked for the session's running task)."""
        if isinstance(command, SendPrompt) and command.queued:
            return None  # a released message was allowed when it was sent
        authors = None
        if command.right in ("approve", "stop"):
            sess = self.find(getattr(command, "session", ""))
            authors = task_authors(sess) if sess is not None else None
        return check(command.who, command.right, authors)

    def find(self, name: str) -> Session | None:
        """A session by internal name (``claude-jim``) or label (``jim``)."""
        found = self.port.sessions.get(name)
        if found is not None:
            return found
        return next((s for s in self.port.sessions if name in (s.name, s.label)), None)

    def at_trust_dialog(self, sess: Session) -> bool:
        """Whether ``sess`` stops at its folder trust dialog: this machine's session, not
        started yet (no hook runs before the dialog is answered), whose screen showed that
        dialog (Codex, read by ``app.Daemon``), or, for Claude Code, started in a folder it
        does not trust: a forecast, for asking the question early.  Keys and prompts go by
        the screen (``_trust``, ``_prompt``)."""
        if sess.state != State.UNKNOWN or sess.claude_session_id or "@" in sess.name:
            return False
        if sess.start_dialog:  # seen on its screen (an agent no hook of which says it started)
            return sess.start_dialog == Kind.TRUST
        return (bool(sess.cwd) and sess.coding_agent in ("", CLAUDE.name)  # Claude Code's list
                and not folders.is_trusted(sess.cwd, self.trusted()))

    # -- prompts -----------------------------------------------------------------------

    async def _prompt(self, cmd: SendPrompt) -> Result:
        sess = self._running(cmd.session)
        if isinstance(sess, Declined):
            return sess
        if cmd.who.raw_keys and sess.state != State.WAITING and not cmd.queued:
            return await self._raw_keys(cmd, sess)
        text = chatprompt.clean(cmd.text).strip()
        if not text:
            return Declined(Reason.EMPTY)
        # a session still starting may draw its trust dialog any moment: its screen is
        # awaited (a message typed then would answer the dialog, on "No, exit")
        starting = not sess.claude_session_id and sess.state == State.UNKNOWN
        seen = await self.port.screen(sess.name, STARTING_WAIT if starting else 0.0) \
            if "@" not in sess.name else None
        if isinstance(seen, Dialog) and seen.kind == Kind.TRUST:
            return Declined(Reason.TRUST_FIRST, sess.name)
        # a released message goes in with the author the daemon kept with it, whoever
        # asks for the release (their surface keeps no authors; an unknown one: the floor)
        who, reply_to = cmd.who, cmd.reply_to
        if cmd.queued:
            kept = next((m.author for m in sess.queue if m.msg_id == str(cmd.msg_id)
                         and m.chat_id == str(cmd.chat_id)), None)
            who = Person(kept.user_id, kept.label, kept.role) if kept is not None else NOBODY
            reply_to = kept.reply_to if kept is not None else None
        kept_as = Author(who.user_id, who.label, who.role, dict(reply_to) if reply_to else None)
        if isinstance(seen, Dialog) and cmd.queued:
            # released while another dialog came up: it waits again, never typed into it
            return Held(sess.name, "dialog")
        if not cmd.queued:
            # a program still starting whose screen could not be read: keys typed there
            # could answer a dialog not recognised (Codex's trust took an Enter so)
            unread = starting and seen is None and "@" not in sess.name
            held = Held(sess.name, "start") if unread else \
                self._held(sess, cmd.who, on_screen=isinstance(seen, Dialog))
            if held is not None:
                # The daemon saves it at once; a ``release`` output says when it may go.
                self.port.queue_chat_message(sess.name, cmd.msg_id, text, chat_id=cmd.chat_id,
                                             sender=cmd.who.label, held=True,
                                             held_for=held.until, author=kept_as)
                return held
            self.port.queue_chat_message(sess.name, cmd.msg_id, text, chat_id=cmd.chat_id,
                                         sender=cmd.who.label, author=kept_as)
        try:
            await self.port.type_prompt(
                sess.name, text, note=PromptNote(
                    cmd.msg_id, cmd.chat_id, text, who.user_id, who.label, who.role, cmd.style,
                    dict(reply_to) if reply_to else None),
                submitting=cmd.submitting)
        except (AipagerError, ValueError, OSError) as exc:
            self.port.drop_chat_message(sess.name, cmd.msg_id)
            return _failed(exc, sess.name)
        self.port.audit_action("chat_prompt", who.audited, session=sess.name,
                               msg_id=cmd.msg_id, chat_id=cmd.chat_id)
        return Typed(sess.name)

    # -- the team ------------------------------------------------------------------------

    def _assign(self, cmd: AssignRole) -> Result:
        """Hand out a role (or take membership away), written to the config file the chat's
        access re-reads: an admin hands out the others, only the owner ``owner`` and
        ``admin`` or changes an admin (``rights.check_assign``, with the member's role)."""
        env = self.port.env
        try:
            cfg = config.load(env)
            current = next((m for m in cfg.members if m.id == cmd.user_id), None)
            if cmd.role != "none":
                config.check_role(cmd.role, env)
            why = check_assign(cmd.who, "user" if cmd.role == "none" else cmd.role,
                               current.role if current else None)
            if why is not None:
                return Declined(why)
            # a label once given stays (the owner may have set it); a new one is checked
            label, looked = ((current.label, "") if current and current.label
                             else labels.label_for(cmd.user_id, cmd.wanted, cfg, env))
            if cmd.role == "none":
                looked = ""  # nobody is shown under it
                new = cfg.without_member(cmd.user_id)
            else:
                new = cfg.with_member(config.Member(cmd.user_id, cmd.role, label))
            config.save(env, new)
        except ConfigError as exc:
            return Failed(str(exc), doing="role")
        if looked:
            self.port.audit_action("label_refused", cmd.who.audited, target_id=cmd.user_id,
                                   wanted=cmd.wanted, label=label, looked_like=looked)
        self.port.audit_action("member_role", cmd.who.audited, target_id=cmd.user_id,
                               target=label, new_role=cmd.role)
        return RoleGiven(cmd.user_id, label, cmd.role, looked)

    def _invite(self, cmd: InviteAs) -> Result:
        """A code for one person to join as ``cmd.role`` (``daemon.invites``: good once,
        for a day), if ``cmd.who`` may hand that role out."""
        try:
            config.check_role(cmd.role, self.port.env)
        except ConfigError as exc:
            return Failed(str(exc), doing="role")
        why = check_assign(cmd.who, cmd.role, None)
        if why is not None:
            return Declined(why)
        try:
            code, expires = invites.make(self.port.env, cmd.role, cmd.who.user_id or 0,
                                         time.time())
        except OSError as exc:
            return Failed(f"cannot keep the invitation: {exc.strerror or exc}", doing="role")
        self.port.audit_action("member_invite", cmd.who.audited, new_role=cmd.role)
        return Invitation(cmd.role, code, expires)

    def _join(self, cmd: JoinTeam) -> Result:
        """A stranger joins with an invitation's code: written to the config as a member of
        the role the invitation names, labelled as ``_assign`` labels a new member.  The
        code is used up only once the member is saved."""
        env = self.port.env
        try:
            cfg = config.load(env)
        except ConfigError as exc:
            return Failed(str(exc), doing="join")
        user_id = cmd.who.user_id
        if user_id is None or any(m.id == user_id for m in cfg.members) \
                or (cfg.chat_id > 0 and user_id == cfg.chat_id):
            # nothing is used up: the code stays for the person it was made for
            return Declined(Reason.MEMBER_ALREADY)
        code = cmd.code.strip()
        try:
            invite = invites.take(env, code, time.time())
        except OSError as exc:
            return Failed(f"cannot read the invitations: {exc.strerror or exc}", doing="join")
        if isinstance(invite, str):
            return Declined(Reason.NOT_INVITED, invite)
        label, looked = labels.label_for(user_id, cmd.wanted, cfg, env)
        try:
            config.save(env, cfg.with_member(config.Member(user_id, invite.role, label)))
        except ConfigError as exc:
            with contextlib.suppress(OSError):  # try again: the code stays good
                invites.put_back(env, code, invite)
            return Failed(str(exc), doing="join")
        who = Who(label, user_id, invite.role)
        if looked:
            self.port.audit_action("label_refused", who, wanted=cmd.wanted, label=label,
                                   looked_like=looked)
        self.port.audit_action("member_join", who, invited_by=invite.by)
        return Joined(user_id, label, invite.role, looked, invite.by)

    # -- files for a prompt ----------------------------------------------------------------

    async def _keep(self, cmd: KeepFiles) -> Result:
        """Keep each file in its sender's own folder (``files.save_download``: owner-only,
        never through a planted link, a name that cannot leave the folder)."""
        if not cmd.files:
            return Declined(Reason.NO_FILE)
        kept: list[str] = []
        for name, data in cmd.files:
            try:
                kept.append(await asyncio.to_thread(files.save_download, self.port.env,
                                                    cmd.who.user_id or 0, name, data))
            except (files.FileRefused, AipagerError, OSError) as exc:
                return FileNotKept(name, str(exc), tuple(kept))
        self.port.audit_action(f"{cmd.via}_upload", cmd.who.audited, session=cmd.session,
                               files=len(kept))
        return FilesKept(tuple(kept))

    def _held(self, sess: Session, who: Person, *, on_screen: bool = False) -> Held | None:
        """Each task keeps the rights of one author: another person's message waits for the
        task to end; text typed while a dialog is up would answer it (``on_screen``: the
        screen shows one, a teammate's or one no hook announced)."""
        if (sess.state in (State.WORKING, State.WAITING) and not who.never_held
                and who.user_id not in task_authors(sess)):
            return Held(sess.name, "task", author_label(sess))
        if sess.state == State.WAITING or on_screen:
            return Held(sess.name, "dialog")
        return None

    async def _raw_keys(self, cmd: SendPrompt, sess: Session) -> Result:
        """The owner's opt-in: the text typed as keys, exactly as sent (no note: bash mode
        and Claude Code's commands read none, and the owner's rights need none)."""
        if cmd.submitting is not None:
            cmd.submitting()
        try:
            await self.port.type_text(sess.name, cmd.text)
        except (AipagerError, ValueError, OSError) as exc:
            return _failed(exc, sess.name)
        self.port.audit_action("chat_raw_keys", cmd.who.audited, session=sess.name,
                               msg_id=cmd.msg_id, chat_id=cmd.chat_id)
        return Typed(sess.name)

    # -- requests ----------------------------------------------------------------------

    def _answerer_of(self, cmd: AnswerRequest | AnswerQuestion | AnswerForm) -> Session | Result:
        """The session whose dialog ``cmd`` answers (its person's right was checked: the
        task's author or an admin, one right for requests, questions and forms); else the
        result."""
        sess = self.find(cmd.session)
        return Gone() if sess is None else sess

    async def _answer(self, cmd: AnswerRequest) -> Result:
        sess = self._answerer_of(cmd)
        if not isinstance(sess, Session):
            return sess
        try:
            return await self.port.answer_request(
                sess.name, cmd.key, cmd.kind, cmd.who.who,
                reason=cmd.reason if cmd.kind == "deny" else "", suggestion=cmd.suggestion,
                edit=cmd.edit if cmd.kind == "allow" else None)
        except ValueError:
            return Gone()

    async def _question(self, cmd: AnswerQuestion) -> Result:
        sess = self._answerer_of(cmd)
        if not isinstance(sess, Session):
            return sess
        try:
            return await self.port.answer_question(sess.name, cmd.key, cmd.who.who,
                                                   cmd.answers)
        except ValueError as exc:
            return Failed(str(exc), sess.name, "answer")

    async def _form(self, cmd: AnswerForm) -> Result:
        """An MCP server's form: who may answer it is who may answer a permission request
        (the same right, the task's author or an admin)."""
        sess = self._answerer_of(cmd)
        if not isinstance(sess, Session):
            return sess
        return await self.port.answer_form(sess.name, cmd.key, cmd.who.who, cmd.action,
                                           cmd.content)

    # -- sessions ----------------------------------------------------------------------

    async def _start(self, cmd: StartSession) -> Result:
        folder = cmd.folder
        if folder and (not os.path.isabs(folder) or not os.path.isdir(folder)):
            return Declined(Reason.NO_FOLDER, folder)
        name, at, host = cmd.name.partition("@")  # NAME@host: on that host of a hub
        bare = dtach.check_name(name)  # InvalidSessionName: the surface words it with examples
        if bare.lower() in RESERVED:
            return Declined(Reason.RESERVED_NAME, bare)
        existing = self.find(bare + at + host)
        if existing is not None and existing.state != State.GONE and existing.socket_seen:
            return Declined(Reason.ALREADY_RUNNING, existing.label)
        folder = os.path.normpath(folder) if folder else self.default_folder()
        try:
            mode = Mode(cmd.mode)  # a page's form sends text: a mode no one offers is refused
        except ValueError:
            return Declined(Reason.NO_MODE, str(cmd.mode))
        if cmd.agent and cmd.agent not in AGENTS:
            return Declined(Reason.NO_AGENT, cmd.agent[:40])
        try:
            session = await self.port.start_session(bare + at + host, resume_id=cmd.resume_id,
                                                    cwd=folder, **({"mode": mode.value}
                                                                   if mode else {}),
                                                    **({"agent": cmd.agent} if cmd.agent
                                                       else {}))
        except AipagerError as exc:
            return Failed(str(exc), doing="start")
        self.port.audit_action("session_new", cmd.who.audited, session=session,
                               **({"mode": mode.value} if mode else {}))
        return Started(session, folder)

    async def _stop(self, cmd: StopTask) -> Result:
        sess = self.find(cmd.session)
        if sess is None or sess.state == State.GONE:
            return Declined(Reason.NOT_RUNNING, sess.name if sess else cmd.session)
        if sess.state not in (State.WORKING, State.WAITING):
            return Declined(Reason.NOT_WORKING, sess.name)
        try:
            pressed = await self.port.stop_session(sess.name)
        except AipagerError as exc:
            return Failed(str(exc), sess.name, "stop")
        return Stopping(sess.name, pressed)

    async def _kill(self, cmd: KillSession) -> Result:
        sess = self.find(cmd.session)
        if sess is None:
            return Ended(cmd.session, False)
        try:
            ended = await self.port.kill_session(sess.label)
        except AipagerError as exc:
            return Failed(str(exc), sess.name, "end")
        self.port.audit_action("session_kill", cmd.who.audited, session=sess.name)
        return Ended(sess.name, ended)

    async def _trust(self, cmd: TrustFolder) -> Result:
        """Choose on the folder trust dialog the screen shows "Yes, I trust this folder" or
        "No, exit" (found by their words; the dialog opens on "No, exit").  Nothing is
        pressed, and nothing ended, unless the screen shows that dialog: a question left
        from an earlier session of the name ends no running one."""
        sess = self.find(cmd.session)
        if sess is None or sess.state == State.GONE:
            return Declined(Reason.NO_TRUST_DIALOG, sess.name if sess else cmd.session)
        if not cmd.yes:
            seen = await self.port.screen(sess.name)
            if isinstance(seen, Dialog) and seen.kind == Kind.TRUST \
                    and not any(o.startswith("No") for o in seen.options):
                # Codex's dialog has no "no" (its Esc goes on, untrusted): the no that the
                # question offers is ending the session, as Claude Code's "No, exit" does
                return await self._kill(KillSession(cmd.who, cmd.session))
        try:
            chosen = await self.port.answer_dialog(
                sess.name, Kind.TRUST, lambda dialog: trust_choice(dialog, yes=cmd.yes))
        except (AipagerError, ValueError) as exc:
            return Failed(str(exc), sess.name, "answer")
        if not chosen:
            return Declined(Reason.NO_TRUST_DIALOG, sess.name)
        if not cmd.yes:
            # Claude Code exits on "No, exit"; its dtach session goes with it (made sure of)
            return await self._kill(KillSession(cmd.who, cmd.session))
        self.port.audit_action("folder_trusted", cmd.who.audited, session=sess.name,
                               folder=sess.cwd)
        return Trusted(sess.name, sess.cwd)

    async def _changes(self, cmd: ShowChanges) -> Result:
        """``/diff``: anyone who may prompt the session may see what it changed, as far as
        their own task could read it (their role and the floor, on the session's machine)."""
        sess = self.find(cmd.session)
        if sess is None:
            return Declined(Reason.NOT_RUNNING, cmd.session)
        if not sess.cwd:
            return Declined(Reason.FOLDER_UNKNOWN, sess.name)
        try:
            diff = await self.port.session_changes(sess.name, role=cmd.who.role,
                                                   user_id=cmd.who.user_id)
        except AipagerError as exc:
            return Failed(str(exc), sess.name, "diff")
        self.port.audit_action("diff_shown", cmd.who.audited, session=sess.name,
                               files=len(diff.files), hidden=diff.hidden)
        return Changes(sess.name, diff.diff, diff.files, diff.hidden, diff.cut, diff.repo)

    def _running(self, name: str) -> Session | Declined:
        sess = self.find(name)
        if sess is None or sess.state == State.GONE:
            return Declined(Reason.NOT_RUNNING, sess.name if sess else name)
        return sess

    async def _compact(self, cmd: CompactSession) -> Result:
        sess = self._running(cmd.session)
        if isinstance(sess, Declined):
            return sess
        try:
            await self.port.type_text(sess.name, "/compact")
        except AipagerError as exc:
            return Failed(str(exc), sess.name, "compact")
        return Compacting(sess.name)

    async def _model(self, cmd: SwitchModel) -> Result:
        if not MODEL_NAME.fullmatch(cmd.model):
            return Declined(Reason.NO_MODEL, cmd.model[:64])
        sess = self._running(cmd.session)
        if isinstance(sess, Declined):
            return sess
        try:
            await self.port.switch_model(sess.name, cmd.model)
        except (AipagerError, ValueError, OSError) as exc:
            return Failed(str(exc), sess.name, "model")
        self.port.audit_action("model_switch", cmd.who.audited, session=sess.name,
                               model=cmd.model)
        return Switching(sess.name, cmd.model)

    async def _resume(self, cmd: ResumeSession) -> Result:
        """In its own folder when it is still there, else the default one."""
        sess = self.find(cmd.session)
        if sess is None or not sess.claude_session_id:
            return Declined(Reason.NOT_ENDED, sess.name if sess else cmd.session)
        if sess.state != State.GONE and sess.socket_seen:
            return Declined(Reason.ALREADY_RUNNING, sess.label)
        name, at, host = sess.label.partition("@")  # NAME@host: on that host of a hub
        folder = sess.cwd if sess.cwd and os.path.isdir(sess.cwd) else self.default_folder()
        try:
            session = await self.port.start_session(dtach.check_name(name) + at + host,
                                                    resume_id=sess.claude_session_id,
                                                    cwd=folder, **({"agent": sess.coding_agent}
                                                                   if sess.coding_agent else {}))
        except AipagerError as exc:
            return Failed(str(exc), sess.name, "resume")
        self.port.audit_action("session_resume", cmd.who.audited, session=session)
        return Resumed(session, folder)


def _failed(exc: BaseException, session: str) -> Failed:
    """A message not delivered, and why."""
    if isinstance(exc, SessionNotFound):
        return Failed(str(exc), session, cause="not_running")
    if isinstance(exc, SessionError):
        return Failed(str(exc), session)
    return Failed(str(exc), session, cause="other")


__all__ = ["Service"]
