"""What the daemon does when a client asks: the port's calls (``daemon.port.DaemonPort``).

Answering a request (the waiting hook, else the dialog's keys) or a question, starting,
stopping and ending sessions, typing a prompt in its one encoded form, switching a model,
reading a work tree's changes, the chat's held messages and the audit.  ``app.Daemon`` is
the process (lock, socket, ingest, journal, timers) and brings what these calls work on:
the core, the terminals, the journal, the audit log.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from typing import Coroutine, Any, Callable, Mapping, Sequence


from aipager import agents, dtach
from aipager.proto import fsio
from aipager import claudefiles
from aipager.daemon import dialogkeys, edits, replies, requests, worktree
from aipager.texts import render
from aipager.daemon.audit import AuditFile
from aipager.daemon.core import DaemonCore
from aipager.port.outputs import (FanoutNotifier, NoticeName)
from aipager.port.model import Author, PromptNote, Request, Session, State
from aipager.port.backend import (Already, AnswerKind, ByHook, ByKeys, Gone, HostView, InTerminal,
                                 KeysFailed, Outcome, Refused, Who)
from aipager.daemon.registry import Registry
from aipager.port import forms
from aipager.port.forms import FormAction
from aipager.daemon import screen as screens
from aipager.daemon.terminal import ESCAPE, SessionIO
from aipager.proto.errors import AipagerError, SessionNotFound, SettingsError
from aipager.policy import marker

log = logging.getLogger("aipager.daemon")

#: a dialog reads keys this long after it is drawn (measured on 2.1.328: tui_keys.json)
DIALOG_SETTLE = 1.0
#: how long a question's answer waits for the dialog to be drawn
DIALOG_WAIT = 10.0
#: stops of one session this close together press Escape once
STOP_DEBOUNCE = 2.0
#: moves of a dialog's selection tried before giving up (each waits for the redraw)
DIALOG_STEPS = 6
#: how long one move waits for the screen to show it
DIALOG_REDRAW = 1.0
#: how long answering a dialog waits for a session that is still starting to draw anything
DIALOG_FIRST_LOOK = 15.0
#: how often a message held for a dialog on screen looks again whether it closed
SCREEN_POLL = 1.0
#: how long a just-started session's screen is followed for its input line or a dialog
#: (then discovery goes on looking, every few seconds)
START_WATCH = 120.0
#: how long a model switch is watched for Claude Code saving it in its settings
MODEL_SAVE_WAIT = 10.0
#: a message typed into an idle session and not taken this long after its Enter was declined
#: by Claude Code (it submits at once; generous for a loaded machine)
DECLINE_SECONDS = 20.0


class PortCalls:
    """The port's calls, on what ``app.Daemon`` sets up."""

    env: dict[str, str]
    core: DaemonCore
    session_io: SessionIO
    audit: AuditFile
    notifier: FanoutNotifier
    facts: list[Callable[[], dict[str, Any]]]
    _stopped: dict[str, float]
    #: set by SIGINT/SIGTERM: the daemon shuts down (``app.Daemon.serve``)
    stop_event: asyncio.Event
    #: session → the title of the start dialog its chat was told of (``read_start``)
    _start_dialogs: dict[str, str]

    # (the process's own: ``app.Daemon``)
    def save(self, *, force: bool = False, stopped: bool = False) -> None:
        raise NotImplementedError

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        raise NotImplementedError

    # -- the port (``aipager.port.backend``): what clients may ask -------------------------

    @property
    def sessions(self) -> Registry:
        return self.core.registry

    @property
    def remote(self) -> None:
        """Every session is this machine's own (a hub's port has hosts)."""
        return None

    @property
    def stopping(self) -> bool:
        """The daemon shuts down (SIGINT/SIGTERM): what a client says now is its last."""
        return self.stop_event.is_set()

    async def answer_request(self, session: str, key: str, kind: AnswerKind, who: Who, *,
                             reason: str = "", suggestion: int | None = None,
                             edit: str | None = None) -> Outcome:
        """Answer permission request ``key`` of ``session`` (``replies.answer``): to the
        hook that waits, else with the terminal dialog's keys.

        Args:
            kind: ``allow``, ``allow_always``, ``deny`` or ``stop`` (deny and end the task).
            who: who answers (named by a deny's message, the verdict and the audit).
            reason: a deny's reason, handed to Claude (a reply to the request).
            suggestion: for ``allow_always``, which one of Claude Code's suggestions.
            edit: for ``allow``, the corrected command (Bash) or path: the call is
                allowed as edited, once the policy allows it (``edits``); else ``Refused``.

        Raises:
            ValueError: an unknown kind, or an edit with another kind than allow.
        """
        found = replies.find(self.core.ctx, session, key)
        sess, req = found if found is not None else (None, None)
        if req is not None and not req.answered and (
                (req.tool == "ExitPlanMode" and not req.reply_addr)
                or (req.terminal_only and kind != "stop")):
            # The plan dialog's keys differ with and without a plan file ("1" is auto mode
            # in one, "2" is No in the other), and auto mode's dialog has choices of its
            # own: only the waiting hook, or the terminal, answers those safely.
            return InTerminal()
        if req is not None and sess is not None and not req.answered \
                and kind in ("allow", "allow_always") and req.kind == "permission":
            why = edits.approver_refusal(self.env, who.role, req.tool, req.subject,
                                         req.cwd or sess.cwd or "")
            if why is not None:
                self.audit_action("approval_refused", who, session=sess.name, tool=req.tool,
                                  subject=req.subject, reason=why)
                return Refused(f"the safety policy would refuse this call to your role: {why}")
        edited_input = None
        if edit is not None:
            if kind != "allow":
                msg = "only an allow takes an edit"
                raise ValueError(msg)
            if sess is None or req is None:
                return Gone()
            if req.answered:
                return Already()
            refused = self._refuse_edit(sess, req, who, edit)
            if isinstance(refused, Refused):
                return refused
            edited_input = refused
        try:
            result = replies.answer_found(self.core.ctx, found, kind, who.label,
                                          who_id=who.user_id, role=who.role, reason=reason,
                                          suggestion=suggestion, edited_input=edited_input)
        except ValueError as exc:
            if edited_input is None:
                raise
            return Refused(str(exc))
        self.save(force=True)
        if result == replies.NO_HOOK:
            return Refused("Claude Code no longer waits for this answer: an edited call "
                           "needs the waiting hook (answer it in the terminal)")
        if result == replies.ALREADY:
            return Already()
        if result == replies.GONE or sess is None or req is None:
            return Gone()
        if result == replies.VIA_KEYS:
            if not agents.get(sess.coding_agent).dialog_keys:
                # an agent whose dialog aipager has not read on the real program: no key
                # is guessed at it (the tap is given back; the terminal answers it)
                requests.unclaim(self.core.ctx, sess, req)
                return InTerminal()
            if kind != "stop" and isinstance(await self.screen(session), screens.Prompt):
                # the screen shows the input line, no dialog: "1" would be typed as text and
                # Esc would interrupt the running task (answered at the computer meanwhile)
                requests.unclaim(self.core.ctx, sess, req)
                return KeysFailed("its dialog is not on the screen any more (answered at the "
                                  "computer?): no key was pressed")
            try:
                await self.session_io.press(session, dialogkeys.permission(kind))
            except AipagerError as exc:
                requests.unclaim(self.core.ctx, sess, req)
                return KeysFailed(str(exc))
            requests.keys_pressed(self.core.ctx, sess, req)
        if kind == "stop":
            try:
                await self.stop_session(session)
            except AipagerError as exc:
                log.warning("stop after deny failed: %s", exc)
        if result != replies.VIA_HOOK:
            return ByKeys()
        # what a scoped button had Claude Code remember, for the words that say so
        return ByHook(scope=replies.remembered(
            replies.decision_for(kind, req, who.label, reason, suggestion), suggestion)
            if kind == "allow_always" else {})

    def _refuse_edit(self, sess: Session, req: Request, who: Who, edit: str) -> dict | Refused:
        """The edited tool input, or why it may not run (audited as ``edit_refused``)."""
        if not req.reply_addr:
            return Refused("Claude Code no longer waits for this answer: an edited call "
                           "needs the waiting hook (answer it in the terminal)")
        try:
            edited_input = edits.edited(req.tool, req.tool_input, edit)
        except ValueError as exc:
            return Refused(str(exc))
        why = edits.refusal(self.env, sess.name, who.role, req.tool, edited_input,
                            req.cwd or sess.cwd or "")
        if why is None:
            return edited_input
        self.audit_action("edit_refused", who, session=sess.name, tool=req.tool,
                          edited_input=edited_input, reason=why)
        return Refused(f"the safety policy refuses the edited call: {why}")

    def _open(self, session: str, key: str, kind: str) -> tuple[Session, Request] | Outcome:
        """The open request ``key`` of ``kind`` in ``session``, or why it cannot be
        answered: ``Gone`` (no such session or request), ``Already`` (answered)."""
        sess = self.core.registry.get(session)
        req = next((r for r in sess.requests if r.key == key and r.kind == kind),
                   None) if sess is not None else None
        if sess is None or req is None:
            return Gone()
        if req.answered:
            return Already()
        return sess, req

    async def answer_question(self, session: str, key: str, who: Who,
                              answers: Sequence[dialogkeys.Answer] | None) -> Outcome:
        """Answer question ``key`` of ``session`` with ``answers`` (one per question), or
        decline it (None): its dialog's keys are pressed once it reads them."""
        found = self._open(session, key, "question")
        if not isinstance(found, tuple):
            return found
        sess, req = found
        action = "question_decline" if answers is None else "question_answer"
        if answers is None:
            keys = dialogkeys.decline()
        else:
            asked = req.questions or [{"question": req.description, "options": req.options}]
            try:
                keys = dialogkeys.question_keys(asked, list(answers))
            except (ValueError, IndexError) as exc:
                msg = f"the answers do not fit the question: {exc}"
                raise ValueError(msg) from exc
        # claimed first: a second tap presses nothing, even while these keys go in
        requests.claim_for_keys(self.core.ctx, sess, req, action, who.label)
        await self._dialog_ready(req)
        try:
            await self.session_io.press(session, keys)
        except AipagerError as exc:
            requests.unclaim(self.core.ctx, sess, req)
            return KeysFailed(str(exc))
        requests.keys_pressed(self.core.ctx, sess, req)
        self.audit_action(action, who, session=session, tool="AskUserQuestion")
        return ByKeys()

    async def answer_form(self, session: str, key: str, who: Who, action: FormAction,
                          content: Mapping[str, Any]) -> Outcome:
        """Answer an MCP server's form (``key``) of ``session``: to the hook that waits.

        ``content`` is checked against the form first (``forms.content``): a missing
        required field or a value that does not fit is ``Refused`` with the reason, and
        nothing is sent.  With no hook waiting the form is in the terminal: ``InTerminal``.
        """
        found = self._open(session, key, "form")
        if not isinstance(found, tuple):
            return found
        sess, req = found
        if action not in forms.ACTIONS:
            return Refused(f"a form is answered with {', '.join(forms.ACTIONS)}")
        checked = None
        if action == "accept":
            try:
                checked = forms.content([forms.Field.from_json(f) for f in req.form],
                                        dict(content))
            except forms.FormError as exc:
                return Refused(str(exc))
        try:
            result = replies.answer_form(self.core.ctx, sess, req, action, checked, who.label,
                                         who_id=who.user_id, role=who.role)
        except ValueError as exc:
            return Refused(str(exc))
        self.save(force=True)
        if result == replies.ALREADY:
            return Already()
        if result == replies.NO_HOOK:
            return InTerminal()
        return ByHook()

    async def _dialog_ready(self, req: Request) -> None:
        """Wait until Claude Code shows the dialog and reads keys (``DIALOG_SETTLE`` after its
        PermissionRequest; at most ``DIALOG_WAIT`` when that event never comes)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DIALOG_WAIT
        while not req.dialog_at and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if req.dialog_at:
            left = req.dialog_at + DIALOG_SETTLE - self.core.registry.clock()
            if left > 0:
                await asyncio.sleep(min(left, DIALOG_SETTLE))

    async def start_session(self, label: str, *, resume_id: str = "", cwd: str = "",
                            mode: str = "", agent: str = "") -> str:
        """Start session ``label`` in dtach in ``cwd`` running ``agent`` (Claude Code; the
        same code as ``aipager session --detached``); returns its internal name.

        Raises:
            InvalidSessionName, SessionError: as ``dtach.create``.
            ValueError: an unknown agent, or a mode it has no equivalent of.
        """
        bare = dtach.check_name(label)
        runs = agents.get(agent)
        args = runs.resume_args(resume_id) + runs.mode_args(mode)
        await asyncio.to_thread(dtach.create, self.env, bare, args=args, cwd=cwd or None,
                                agent=runs)
        session = dtach.session_name(bare)
        reg = self.core.registry
        sess = reg.ensure(session)
        reg.revive(sess)  # a new process: whatever the registry knew of the name is over
        sess.coding_agent = runs.name
        sess.socket_seen = True
        sess.cwd = sess.cwd or cwd
        reg.touch(sess)
        if not runs.announces_start:
            self._spawn(self._watch_start(session))
        return session

    async def read_start(self, session: str) -> None:
        """A session whose agent fires no hook when it has started (Codex: SessionStart
        comes with the first prompt) is ready once its screen shows its input line (and
        the messages held for its start go in); a
        dialog it shows first is kept as ``Session.start_dialog`` (its folder trust: the
        chat's and the page's trust question) or told to its chat once, as the screen
        words it (a first start's offer, hooks to review)."""
        sess = self.core.registry.get(session)
        if sess is None or sess.state == State.GONE:
            return
        if sess.state != State.UNKNOWN:
            if any(m.status == "held" and m.held_for == "start" for m in sess.queue):
                # it started while its watcher was not there (a restart): they go in now
                requests.release_held(self.core.ctx, sess, only="start")
            return
        agent = agents.AGENTS.get(sess.coding_agent, agents.CLAUDE)
        if agent.announces_start:
            return
        seen = await self.screen(session)
        if sess.state != State.UNKNOWN:
            return  # an event came meanwhile
        reg = self.core.registry
        if isinstance(seen, screens.Prompt):
            sess.start_dialog = ""
            reg.set_state(sess, State.READY)
            self._start_dialogs.pop(sess.name, None)
            requests.release_held(self.core.ctx, sess, only="start")
        elif isinstance(seen, screens.Dialog) \
                and self._start_dialogs.get(sess.name) != seen.title:
            self._start_dialogs[sess.name] = seen.title
            sess.start_dialog = str(seen.kind)
            reg.touch(sess)
            if seen.kind != screens.Kind.TRUST:  # the trust question asks that one
                self.core.ctx.notice(sess, NoticeName.START_DIALOG, render.start_dialog(
                    sess.label, agent.title, seen.title, seen.options))

    async def _watch_start(self, session: str) -> None:
        """Follow a just-started session's screen until it is ready (``read_start``), so
        its first message and its trust question need not wait for discovery."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_WATCH
        while loop.time() < deadline:
            sess = self.core.registry.get(session)
            if sess is None or sess.state != State.UNKNOWN:
                return
            await self.read_start(session)
            await self.session_io.screen_changed(session, SCREEN_POLL)

    async def stop_session(self, session: str) -> bool:
        """Interrupt the running task: Escape, as Claude Code's TUI expects.  Stops within
        ``STOP_DEBOUNCE`` seconds press nothing (a burst of taps on ⏹ must not become a
        burst of keys); returns whether Escape was pressed."""
        now = time.monotonic()
        if now - self._stopped.get(session, -STOP_DEBOUNCE) < STOP_DEBOUNCE:
            return False
        self._stopped[session] = now
        await self.session_io.press(session, [ESCAPE])
        return True

    async def kill_session(self, label: str) -> bool:
        return await asyncio.to_thread(dtach.kill, self.env, label)

    async def session_changes(self, session: str, *, role: str,
                              user_id: int | None) -> worktree.Diff:
        sess = self.core.registry.get(session)
        if sess is None or not sess.cwd:
            raise SessionNotFound(f"session {session.removeprefix('claude-')} has no folder")
        from aipager.daemon import encode  # the policy's modules: loaded on first use

        allowed = encode.reads(self.env, role, user_id, cwd=sess.cwd)
        return await asyncio.to_thread(worktree.changes, sess.cwd, allowed)

    async def switch_model(self, session: str, model: str) -> None:
        """``/model NAME`` for this session alone: announced with aipager's marker (no
        "Switch model?" question), and Claude Code's user setting, which the switch
        rewrites, put back afterwards (``claudefiles.put_back_model``)."""
        sess = self.core.registry.get(session)
        if sess is not None and sess.claude_session_id:
            marker.write_modelswitch_marker(self.env, session, model, sess.claude_session_id)
        try:
            before = await asyncio.to_thread(claudefiles.model_setting, self.env)
        except SettingsError as exc:
            before = None
            log.warning("the model switch of %s may stay for later sessions: %s", session, exc)
        await self.session_io.type_text(session, f"/model {model}")
        if before is not None:
            self._spawn(self._put_back_model(before, model))

    async def _put_back_model(self, before: Any, model: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + MODEL_SAVE_WAIT
        while loop.time() < deadline:
            await asyncio.sleep(0.2)
            try:
                if await asyncio.to_thread(claudefiles.put_back_model, self.env, before, model):
                    log.info("the model %s stays with its session: Claude Code's setting "
                             "put back", model)
                    return
            except SettingsError as exc:
                log.warning("cannot put Claude Code's model setting back: %s", exc)
                return

    async def type_prompt(self, session: str, text: str, *, note: PromptNote,
                          submitting: Callable[[], None] | None = None) -> None:
        """Type a person's message as a prompt with its permission note.

        The words cross into Claude Code in one encoded form (``policy.chatprompt``):
        a first line naming the sender, every ``@`` inert but the mentions this
        sender's rights allow as Reads (decided here, with this machine's policy and
        the session's folder).  ``DtachIO.type_prompt`` types nothing else;
        ``submitting`` runs right before its Enter.

        Raises:
            ValueError: nothing to send.
        """
        from aipager.daemon import encode

        sess = self.core.registry.get(session)
        encoded = encode.encode(self.env, text, note, cwd=sess.cwd if sess else "",
                                agent=agents.get(sess.coding_agent if sess else ""))
        await self.session_io.type_prompt(session, encoded.text,
                                          note=dataclasses.replace(note, text=encoded.text),
                                          submitting=submitting)
        if sess is not None and sess.state == State.READY:
            # Claude was idle: Claude Code submits at once, or declined the text
            self._spawn(self._check_taken(session, note))

    async def _check_taken(self, session: str, note: PromptNote) -> None:
        """A message typed into an idle session that Claude Code still has not taken after
        ``DECLINE_SECONDS`` was declined (it sits in the input box): the box is emptied, its
        note deleted (a late submission is then blocked by the hook as no message) and its
        author told on the message.  A busy session queues messages: not checked."""
        from aipager.policy import notes

        await asyncio.sleep(DECLINE_SECONDS)
        sess = self.core.registry.get(session)
        waiting = [n for n in notes.list_notes(self.env, session)
                   if isinstance(n.doc, dict) and n.doc.get("msg_id") == note.msg_id
                   and n.doc.get("chat_id") == note.chat_id]
        if not waiting or sess is None or sess.state != State.READY:
            return
        log.warning("Claude Code did not take a chat message in %s: cleared", session)
        for found in waiting:
            fsio.unlink_quiet(found.path)
        with contextlib.suppress(AipagerError, OSError):
            await self.session_io.press(session, [dtach.CLEAR_INPUT])
        self.drop_chat_message(session, note.msg_id)
        self.core.ctx.notice(sess, NoticeName.NOT_TAKEN, render.not_taken(sess.label),
                             chat_id=note.chat_id, msg_id=note.msg_id)

    async def type_text(self, session: str, text: str) -> None:
        await self.session_io.type_text(session, text)

    async def screen(self, session: str, wait: float = 0.0) -> screens.Seen:
        """What the session's terminal shows now: a dialog, the input line, or None; with
        ``wait``, up to that long for it to show either (a program still starting)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            rows = await self.session_io.screen(session)
            seen = screens.read(rows) if rows else None
            left = deadline - loop.time()
            if seen is not None or left <= 0:
                return seen
            await self.session_io.screen_changed(session, min(left, SCREEN_POLL))

    async def answer_dialog(self, session: str, kind: screens.Kind,
                            pick: Callable[[screens.Dialog], int]) -> bool:
        """Choose, on the dialog of ``kind`` the screen shows, the choice ``pick`` finds
        in it: the arrows move the selection there, and Enter is pressed only once the
        screen shows that choice selected.  False (nothing more pressed) as soon as the
        screen shows no such dialog."""
        for step in range(DIALOG_STEPS):
            # the first look may come before a starting program drew anything: it waits
            seen = await self.screen(session, DIALOG_FIRST_LOOK if step == 0 else 0.0)
            if not isinstance(seen, screens.Dialog) or seen.kind != kind:
                return False
            target = pick(seen)
            if seen.selected == target:
                await self.session_io.press(session, [screens.ENTER])
                return True
            await self.session_io.press(session, screens.choose(seen, target))
            await self.session_io.screen_changed(session, DIALOG_REDRAW)
        return False

    def audit_action(self, action: str, who: Who, **fields: Any) -> None:
        """One audit record for something a client did, naming who (id, label, role)."""
        self.audit_chat(action, who=who.label, who_id=who.user_id, role=who.role, **fields)

    def set_previews(self, on: bool) -> None:
        """Make diff previews (a chat shows them only where they are turned on)."""
        reg = self.core.registry
        reg.knobs = dataclasses.replace(reg.knobs, diff_previews=on)

    def add_facts(self, facts: Callable[[], dict[str, Any]]) -> None:
        """More facts for the saved state (``aipager status``): a client's health."""
        self.facts.append(facts)

    def hosts(self) -> Sequence[HostView]:
        return ()  # one machine: its sessions need no host

    def queue_chat_message(self, session: str, msg_id: int | str, text: str, *,
                           chat_id: int | str = "", sender: str = "", held: bool = False,
                           held_for: str = "task", author: Author | None = None) -> None:
        """A chat message for ``session``: typed now (👀 until Claude takes it) or, with
        ``held``, waiting for the task to end or (``held_for="dialog"``) for the open dialog
        to close (a ``release`` output says when); ``author`` is kept with it, saved."""
        self.core.registry.queue_message(session, str(msg_id), text, chat_id=str(chat_id),
                                         sender=sender, held=held, held_for=held_for,
                                         author=author)
        self.save(force=True)
        sess = self.core.registry.get(session)
        if held and held_for == "dialog" and sess is not None and sess.state != State.WAITING:
            # a dialog no hook announced (a teammate's, one a newer Claude Code adds): no
            # request will close it, so its closing is read off the screen
            self._spawn(self._release_when(
                session, "dialog", lambda seen: not isinstance(seen, screens.Dialog)))
        if held and held_for == "start":
            self._spawn(self._release_when(
                session, "start", lambda seen: isinstance(seen, screens.Prompt)))

    async def _release_when(self, session: str, held_for: str,
                            clear: Callable[[screens.Seen], bool]) -> None:
        """Messages held for ``held_for`` go in once the screen is ``clear`` of it: for a
        dialog no hook announced, once none shows (a request opened meanwhile releases
        them itself when it closes); for a start, once its input line shows (a dialog
        shown first keeps them until it is answered)."""
        while True:
            seen = await self.screen(session)
            sess = self.core.registry.get(session)
            if sess is None or sess.state == State.GONE:
                return
            if held_for == "dialog" and sess.state == State.WAITING:
                return
            if clear(seen):
                requests.release_held(self.core.ctx, sess, only=held_for)
                self.save(force=True)
                return
            await self.session_io.screen_changed(session, SCREEN_POLL)

    def audit_chat(self, action: str, **fields: Any) -> None:
        """One audit record for something done from the chat (prompts, management)."""
        from aipager.daemon.audit import iso_seconds

        self.audit.write({"ts": iso_seconds(time.time()), "action": action, **fields})

    def drop_chat_message(self, session: str, msg_id: int | str) -> None:
        """Forget a queued chat message that could not be typed after all."""
        sess = self.core.registry.get(session)
        if sess is not None:
            sess.queue[:] = [m for m in sess.queue if m.msg_id != str(msg_id)]
            self.core.registry.touch(sess)

