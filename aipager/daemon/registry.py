"""The pure session registry: sessions and their tasks, rows, agents, commands, queue.

No I/O and no asyncio.  Time comes from an injected ``clock`` (wall-clock
seconds) so tests drive it by hand and persisted stamps survive a restart.
Handlers (``aipager.daemon.events``) mutate sessions through it and mark them
``dirty`` so the daemon re-renders only the cards that changed.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator

from aipager.proto import paths
from aipager.daemon import limits
from aipager.daemon.knobs import Knobs
from aipager.port.model import Author, QueuedMessage, Session, State, Task

#: chat messages remembered per session
QUEUE_CAP = 50
#: a queued message older than this is forgotten (Claude never took it)
QUEUE_MAX_AGE = 24 * 3600.0
#: ended sessions are kept this long (resumable from the list of ended sessions)
GONE_MAX_AGE = 14 * 24 * 3600.0


def label_of(name: str) -> str:
    """``claude-jim`` → ``jim`` (the name people see)."""
    prefix = paths.SESSION_PREFIX
    return name[len(prefix):] if name.startswith(prefix) else name


class Registry:
    """All sessions the daemon follows.

    Args:
        clock: returns wall-clock seconds; injected so tests control time.
        knobs: limits and timeouts (``Knobs.from_env``).
    """

    def __init__(self, clock: Callable[[], float] = time.time, knobs: Knobs | None = None) -> None:
        self.clock = clock
        self.knobs = knobs or Knobs()
        self.sessions: dict[str, Session] = {}
        #: sessions whose card or state changed since the last flush
        self.dirty: set[str] = set()
        #: set when something must reach disk now (a delivered answer)
        self.save_now = False
        #: set when a card should be shown now rather than at the next tick (a task ended)
        self.flush_now = False
        #: bumped on every change; the daemon saves when it moved
        self.version = 0
        #: sessions forgotten by the orphan limits (``limits.shed_orphans``), and whether
        #: the cap was ever hit (it is logged once)
        self.forgotten = 0
        self.orphan_cap_hit = False
        self._shed_at = self.knobs.orphan_cap + limits.SHED_SLACK

    def __iter__(self) -> Iterator[Session]:
        return iter(self.sessions.values())

    def get(self, name: str) -> Session | None:
        return self.sessions.get(name)

    def ensure(self, name: str) -> Session:
        """The session called ``name``, registered (state UNKNOWN) if new."""
        sess = self.sessions.get(name)
        if sess is None:
            sess = Session(name=name, label=label_of(name), registered_at=self.clock())
            self.sessions[name] = sess
            self.touch(sess)
            if len(self.sessions) >= self._shed_at:
                # junk names must not grow memory between two sweeps
                self._shed(keep=name)
        return sess

    def _shed(self, keep: str = "") -> None:
        limits.shed_orphans(self, self.clock(), keep)
        self._shed_at = max(len(self.sessions), self.knobs.orphan_cap) + limits.SHED_SLACK

    def touch(self, sess: Session) -> None:
        """Record that ``sess`` changed (card re-render, state save)."""
        self.dirty.add(sess.name)
        self.version += 1

    # -- tasks -------------------------------------------------------------

    def open_task(self, sess: Session, *, prompt: str = "", prompt_id: str = "",
                  origin: str = "terminal") -> Task:
        """Start a new task (a new card); the previous one is closed if still open."""
        now = self.clock()
        if sess.task is not None and sess.task.ended_at is None:
            sess.task.ended_at = now
        sess.task_seq += 1
        sess.task = Task(seq=sess.task_seq, started_at=now, prompt=prompt,
                         prompt_id=prompt_id, origin=origin)
        sess.reminded = False
        self.touch(sess)
        return sess.task

    def current_task(self, sess: Session, prompt_id: str = "") -> Task:
        """The open task, or a new one of unknown origin when the prompt event was lost."""
        task = sess.task
        if task is not None and (task.ended_at is None or (prompt_id and task.prompt_id == prompt_id)):
            return task
        return self.open_task(sess, prompt_id=prompt_id, origin="unknown")

    def set_state(self, sess: Session, state: State) -> None:
        if sess.state != state:
            sess.state = state
            self.touch(sess)

    def revive(self, sess: Session) -> None:
        """``sess`` is alive after all (its socket is back, an event came, it was started
        again): whatever ended it is forgotten and its state is unknown until an event says."""
        sess.gone_at, sess.end_reason = None, ""
        self.set_state(sess, State.UNKNOWN)

    # -- chat messages (the Telegram layer calls these) ------------------------

    def queue_message(self, name: str, msg_id: str, text: str, *, chat_id: str = "",
                      sender: str = "", held: bool = False,
                      held_for: str = "task", author: Author | None = None) -> QueuedMessage:
        """Remember a chat message for session ``name``.

        ``held``: it waits for the task to end (released by Stop as a ``release``
        output), or with ``held_for="dialog"`` only for the open dialog to close; otherwise it was
        typed now and waits for Claude to take it (``queue_pickup`` turns 👀 into 👍).  At most ``QUEUE_CAP`` are kept.
        """
        sess = self.ensure(name)
        msg = QueuedMessage(msg_id=str(msg_id), text=text, queued_at=self.clock(),
                            chat_id=str(chat_id), sender=sender, status="held" if held else "typed",
                            held_for=held_for, author=author)
        # The same message again (its update handled again after a kill): it replaces itself.
        if msg.msg_id:
            sess.queue[:] = [m for m in sess.queue
                             if (m.msg_id, m.chat_id) != (msg.msg_id, msg.chat_id)]
        sess.queue.append(msg)
        del sess.queue[:-QUEUE_CAP]
        self.touch(sess)
        return msg

    # -- housekeeping ------------------------------------------------------

    def sweep(self) -> list[str]:
        """Apply the time-based rules; returns the names of sessions that changed.

        - an agent silent for ``subagent_silence`` is dropped (its end was lost);
        - a paused agent whose children all ended ``resume_grace`` ago stops counting
          as running (status ``lapsed``, never shown finished);
        - a background command older than ``bg_shell_max_track`` is no longer followed;
        - chat messages queued more than a day ago are forgotten;
        - sessions ended more than 14 days ago are dropped;
        - sessions never seen with a dtach socket are capped and expire (``limits``).
        """
        now = self.clock()
        k = self.knobs
        changed: list[str] = []
        self._shed()
        for name in [s.name for s in self.sessions.values()
                     if s.state == State.GONE and s.gone_at and now - s.gone_at > GONE_MAX_AGE]:
            del self.sessions[name]
            self.version += 1
        for sess in self.sessions.values():
            hit = False
            for agent in sess.agents.values():
                if agent.status == "running" and now - agent.last_seen > k.subagent_silence:
                    agent.status, agent.ended_at, hit = "dropped", now, True
                elif agent.status == "paused":
                    kids = [a for a in sess.agents.values()
                            if a.parent == agent.id and a.status in ("running", "paused")]
                    if kids:
                        continue
                    since = agent.children_done_at or agent.last_seen
                    if now - since > k.resume_grace:
                        agent.status, hit = "lapsed", True
            for cmd in sess.bg.values():
                if cmd.status == "running" and now - cmd.started_at > k.bg_shell_max_track:
                    cmd.status, cmd.ended_at, hit = "no_end", now, True
            if sess.queue and now - sess.queue[0].queued_at > QUEUE_MAX_AGE:
                sess.queue[:] = [m for m in sess.queue if now - m.queued_at <= QUEUE_MAX_AGE]
                hit = True
            if hit:
                self.touch(sess)
                changed.append(sess.name)
        return changed

    # -- persistence -------------------------------------------------------

    def to_state(self) -> list[dict[str, Any]]:
        return [s.to_dict() for s in self.sessions.values()]

    def restore(self, sessions: list[dict[str, Any]]) -> None:
        """Load sessions saved by ``to_state`` (replaces what is registered)."""
        self.sessions = {}
        for raw in sessions:
            try:
                sess = Session.from_dict(raw)
            except (TypeError, ValueError, KeyError):
                continue
            self.sessions[sess.name] = sess
            self.dirty.add(sess.name)
