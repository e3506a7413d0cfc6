"""The outbox: the only code that sends, edits, reacts or uploads on Telegram.

Everything the chat shows goes through ``Outbox.put(op)``; one lane per chat
sends in order, so a person reads events in the order they happened.  An op is
one of a few frozen records (``Op``: ``Post``, ``Live``, ``Upload``, ``React``,
``Action``), each with only its own fields; the outbox ``match``es on the class.

- **Coalescing.** A live message (an activity card, the pinned status line, a
  request whose buttons change) is one slot per key: a newer text replaces the
  older one still waiting, so only the latest text is sent.  Reactions
  coalesce per message the same way.
- **Pacing.** Every call that writes to a chat (a message, an edit, a reaction,
  "typing…") spends from one budget per chat: to a private chat a burst
  of six (a prompt's typed line, status line and card, then Stop's last edit and
  the answer), then one a second; in a group at most 20 a minute; and all chats
  together at most ``GLOBAL_PER_SECOND``.  Within it, edits of a chat's live
  messages go out at most once a second (every three seconds in groups), so at
  a hundred sessions cards are coalesced (only their latest text waits), not
  queued behind each other.  Progress (a card, the prompt typed at the
  computer) leaves ``SEND_RESERVE`` of the pace to what is owed to the person
  (``Post.urgent``: the answer, a request).  A card's last edit (``Live.final``:
  its task ended) does not wait for the pace: the edits are a bucket of
  ``EDIT_BURST`` refilled once a gap, and only a last edit may take the one a
  progress edit leaves, so Stop shows at once and the chat still averages one
  edit a gap.
- **Turns.** A session's new messages keep their order; edits of messages already
  shown may wait while others go (a card's state can arrive later, an answer
  should not).  What is owed is sent before any progress, a turn at a time: a
  session's turn is its messages up to the owed one (the prompt's copy, the card,
  the answer), then its card's last edit, all on the reserve.  Why:
  before, a card waited for a pause in the other sessions' answers that never came
  in a busy minute, and held its own answer behind ~70 that finished later (issue
  46); and a prompt's copy or card skipped as "behind a waiting card" arrived after
  its answer.  Turns go in the order their owed message was put, so answers go in
  the order their tasks finished, except that a host, or a session, that had
  ``FAIR_SLACK`` more new messages than another waiting one in the last
  ``FAIR_WINDOW`` lets that one go first (``_fair``): no host or session takes the
  chat's whole pace.  The same share orders progress.
- **Folding.** A chat that is behind says what the backlog would say in fewer
  messages, rather than all of it late.  A session whose turn comes with more than
  ``FOLD_AT`` answers or notices in a row waiting sends one message: how many were
  left out (``folded_notice``), then the newest as it was (``_fold``), so a flood
  costs its session one message a turn and is current within a minute.  A card
  never shown whose task ended while its answer waits is left out, as a task too
  short for its card is (``notify``).  When the pace has no room for a turn's silent
  prompt copy and its answer apart, the copy carries the answer (``_ride``).  So a
  busy minute's answers go at the pace itself, one message each.
- **Strangers last.** A reply to a non-member (``Post.low``) goes only when
  nothing else waits in its chat and, in a group, only while fewer than half
  of the minute's posts are used; at most ``LOW_KEPT`` wait per chat (more are
  dropped) and none is kept across a restart.  So nobody outside the team
  can hold back what the team is waiting for.
- **Failures.** ``429 retry_after`` pauses that chat only; network errors and
  5xx retry with capped backoff (aiogram's ``Backoff``; the daemon goes on ingesting meanwhile, and
  coalescing means a card catches up with one edit); "message is not
  modified" counts as done; an edit of a message that is gone sends a new
  one; an entity or reply problem is retried without it; other refusals are
  logged and dropped, never retried forever, never raised.
- **Restarts.** What is unsent is kept in the chat state (``pending``: the op records
  of ``bot/ops.py``, saved with ``to_json``) at every save and put back at the next start
  (``ops.from_json``, which also reads the one-record layout older versions saved), so an
  answer accepted by the daemon reaches the chat once even across a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, TypeGuard, cast

from aiogram.utils.backoff import Backoff, BackoffConfig

from aipager.aio import cancel_and_wait
from aipager import locales
from aipager.bot import i18n, private
from aipager.bot.chatstate import LIVE_KEPT, ChatState
from aipager.bot.ops import Action, Live, Op, Post, React, Upload
from aipager.bot.i18n import _, ngettext, number
from aipager.bot.markdown import TELEGRAM_LIMIT, u16_len
from aipager.bot.rawmethods import EditMessageTextRaw, SendMessageRaw

log = logging.getLogger("aipager.bot")

#: seconds between edits of live messages in one chat (Telegram allows about one a second)
EDIT_GAP = 1.0
EDIT_GAP_GROUP = 3.0
#: edits a chat may make at once: progress edits leave one of them for a card's last edit
EDIT_BURST = 2
#: the head of a message sent again after a send whose outcome is unknown
REPEAT_MARK = "↻ "
#: how long closing waits for calls under way (an answer Telegram is slow to accept
#: must not be cut off and sent again at the next start)
INFLIGHT_GRACE = 10.0
#: writes (messages, edits, reactions, chat actions) per minute in a group
GROUP_SENDS_PER_MINUTE = 20
#: writes to a private chat: a burst of this many, then one a second (Telegram asks for
#: about one a second per chat; an answer in parts and its file may go at once)
PRIVATE_BURST = 6
PRIVATE_PER_SECOND = 1.0
#: of those (and of a group's minute), what progress leaves to ``Post.urgent`` ones
SEND_RESERVE = 1
#: retry backoff after network errors and 5xx: 0.5 s, doubled each time, at most 30 s
RETRY_BACKOFF = BackoffConfig(min_delay=0.5, max_delay=30.0, factor=2.0, jitter=0.0)
#: uploads kept across a restart only up to this size (bigger ones are re-made by their owner)
PERSIST_DATA_MAX = 2 * 1024 * 1024
#: replies to strangers (``Post.low``) waiting per chat; more are dropped
LOW_KEPT = 5
#: a group's posts in the last minute above which replies to strangers wait
LOW_SENDS_PER_MINUTE = GROUP_SENDS_PER_MINUTE // 2
#: writes a second to all chats together (Telegram's ceiling for a bot is about 30)
GLOBAL_PER_SECOND = 30
#: the span over which each host's and session's new messages are counted (``_fair``)
FAIR_WINDOW = 60.0
#: new messages a host (or a session) may have had more than another waiting one in
#: ``FAIR_WINDOW`` before it lets that one go first (above a turn's usual size: a prompt's
#: copy, the card, the answer)
FAIR_SLACK = 4
#: a session's turn with more answers or notices than this in a row waiting sends them as
#: one message: how many were left out, then the newest as it was (``Outbox._fold``)
FOLD_AT = 10
#: float noise in the pacing arithmetic (a bucket refilled to the second is full)
_EPSILON = 1e-6


def refused_notice(error: str) -> str:
    """What the chat says of a message Telegram refused (``error``: Telegram's own words)."""
    return _("⚠️ Telegram refused to show a message ({error}); it is on the computer: "
             "`aipager status`, or the session's terminal.").format(error=error)


def folded_notice(session: str, count: int) -> str:
    """What the chat says in place of ``count`` messages of ``session`` it left out (the
    newest follows it)."""
    return ngettext(
        "📦 {session} · {n} older message left out to catch up (Telegram lets a bot post "
        "about once a second); the session's terminal has it. The newest:",
        "📦 {session} · {n} older messages left out to catch up (Telegram lets a bot post "
        "about once a second); the session's terminal has them all. The newest:",
        count).format(session=session.removeprefix("claude-"), n=number(count))


def _slot(op: Op) -> str | None:
    """Ops with the same slot coalesce: only the latest is sent."""
    match op:
        case Live(key=key):
            return f"live:{key}"
        case React(msg_id=msg_id):
            return f"react:{msg_id}"
        case Action():
            return "action"  # "typing…" piles up while Telegram is away: one is enough
    return None


def _kept(op: Op) -> bool:
    """Whether a restart keeps ``op`` (saved in the chat state while unsent)."""
    match op:
        case Action() | Post(low=True):
            return False
        case Upload(data=data):
            return len(data) <= PERSIST_DATA_MAX
    return True


def _host(session: str) -> str:
    """The hub host a session runs on (``claude-jim@box``: ``box``); "" for this machine's
    (a session's own name never holds ``@``)."""
    return session.rpartition("@")[2] if "@" in session else ""


def _foldable(op: Op | str) -> TypeGuard[Post]:
    """A message of a session that may be folded into a count when its session floods the
    chat: a plain post (an answer, a notice) or a prompt's silent copy (a burst of tasks
    typed at the terminal, each a copy and its answer: their answers reply to nothing then),
    not a live message (a request, a question: each is edited or answered later), not a
    count already."""
    return (isinstance(op, Post) and bool(op.session) and not op.low
            and (not op.key or (op.key.startswith(private.PROMPT_KEY_PREFIX) and not op.urgent))
            and not op.folded and not op.refusal and not op.sending)


@dataclass
class _Turns:
    """One look at a lane's queue (``Outbox._turns``), by session ("": the chat's own)."""

    #: the index of each session's first new message: its messages keep their order
    heads: dict[str, int] = field(default_factory=dict)
    #: the index of each session's first owed message (``urgent``: an answer, a request)
    owed: dict[str, int] = field(default_factory=dict)
    #: each session's waiting last edits (``Live.final``): they end its owed turn
    finals: dict[str, list[int]] = field(default_factory=dict)
    #: every waiting edit of a message already shown, in queue order
    edits: list[tuple[int, Live]] = field(default_factory=list)
    #: the first reaction or chat action (no order to keep)
    other: int | None = None
    #: the first reply to a stranger
    low: int | None = None


class _Lane:
    """One chat's queue.  A coalescing op sits in ``queue`` as its slot name."""

    def __init__(self) -> None:
        self.queue: deque[Op | str] = deque()
        self.latest: dict[str, Op] = {}
        self.wake = asyncio.Event()
        self.paused_until = 0.0
        #: the edit bucket (``edit_tokens``), as of ``_edit_at``
        self._edit_tokens, self._edit_at = float(EDIT_BURST), -1e9
        #: when each write of the last minute was made (a group's budget)
        self.writes: deque[float] = deque()
        #: (when, session) of each new message of the last ``FAIR_WINDOW`` (``_fair``)
        self.posted: deque[tuple[float, str]] = deque()
        #: the session whose owed message went last: its card's last edit goes next
        self.closing: str | None = None
        self._tokens, self._tokens_at = float(PRIVATE_BURST), -1e9
        #: network errors and 5xx in a row (``backoff.counter``) and the next wait
        self.backoff = Backoff(RETRY_BACKOFF)
        self.task: asyncio.Task | None = None
        #: the op being sent right now (still unsent until Telegram answers)
        self.inflight: Op | None = None

    def tokens(self, now: float) -> float:
        """A private chat's writes left now (a bucket of ``PRIVATE_BURST`` refilled at
        ``PRIVATE_PER_SECOND``)."""
        return min(PRIVATE_BURST, self._tokens + (now - self._tokens_at) * PRIVATE_PER_SECOND)

    def spend(self, now: float) -> None:
        self._tokens, self._tokens_at = self.tokens(now) - 1.0, now

    def edit_tokens(self, now: float, gap: float) -> float:
        """Edits left now: a bucket of ``EDIT_BURST`` refilled one per ``gap``."""
        return min(EDIT_BURST, self._edit_tokens + (now - self._edit_at) / gap)

    def spend_edit(self, now: float, gap: float) -> None:
        self._edit_tokens, self._edit_at = self.edit_tokens(now, gap) - 1.0, now

    def edit_answered(self, now: float) -> None:
        """Refilling counts from when Telegram answered: calls that take different times
        must still arrive a full gap apart."""
        self._edit_at = now

    def ops(self) -> list[Op]:
        out = [self.inflight] if self.inflight is not None else []
        for item in self.queue:
            op = self.latest.get(item) if isinstance(item, str) else item
            if op is not None:
                out.append(op)
        return out


class Outbox:
    """Per-chat ordered sending with coalescing, pacing and retries (module docstring).

    Args:
        bot: the aiogram ``Bot``.
        state: the chat state (live message ids, routes, reactions, pending).
        on_change: called after anything the state should save (cheap; the
            caller debounces).  ``urgent`` is true when an answer was queued.
        clock: monotonic seconds (tests may pass their own).
    """

    def __init__(self, bot: Any, state: ChatState, *,
                 on_change: Callable[[bool], None] = lambda urgent: None,
                 clock: Callable[[], float] = time.monotonic,
                 locale_for: Callable[[int], str] = lambda chat_id: locales.DEFAULT) -> None:
        self.bot = bot
        #: the language of what the outbox says on its own in a chat (a refused message)
        self._locale_for = locale_for
        self.state = state
        self._on_change = on_change
        self._clock = clock
        self._lanes: dict[int, _Lane] = {}
        self._running = False
        #: counters for status and the bench
        self.counters: dict[str, int] = {"sent": 0, "edited": 0, "retries": 0, "dropped": 0,
                                         "rate_limited": 0, "coalesced": 0, "unchanged": 0,
                                         "folded": 0}
        #: live key → (chat, text, buttons) Telegram last confirmed showing: an edit back to
        #: it (B queued, then A again, coalesced into "A") would only be refused as "message
        #: is not modified" (this run's memory; a restart may spend one such call)
        self._showing: OrderedDict[str, tuple[int, str, Any]] = OrderedDict()
        #: when each write of the last second was made, in any chat (``GLOBAL_PER_SECOND``)
        self._recent: deque[float] = deque()
        # What the last run left unsent is queued now, ahead of anything this run
        # puts: the daemon replays its spool (queueing answers, saving the state)
        # before ``start``, and that save must keep both, each once.
        self._restored = list(state.pending)
        state.pending = []
        for op in self._restored:
            self._queue(op)

    # -- queueing ----------------------------------------------------------------

    def put(self, op: Op, *, urgent: bool = False) -> None:
        """Queue ``op`` (synchronous; never blocks, never raises for delivery).  ``urgent``:
        saved at once, and a post may use the reserve of the chat's pace (``Post.urgent``)."""
        if urgent and isinstance(op, (Post, Upload)):
            op = replace(op, urgent=True)
        self._queue(op)
        self._on_change(urgent)

    def _queue(self, op: Op) -> None:
        lane = self._lanes.get(op.chat_id)
        if lane is None:
            lane = self._lanes[op.chat_id] = _Lane()
        if _low(op) and sum(1 for item in lane.queue if _low(item)) >= LOW_KEPT:
            # A flood of strangers must not grow the queue: their replies are the least owed.
            self.counters["dropped"] += 1
            return
        slot = _slot(op)
        if slot is None:
            lane.queue.append(op)
        elif self._card_left_out(lane, op, slot):
            return
        else:
            if slot in lane.latest:
                self.counters["coalesced"] += 1
            else:
                lane.queue.append(slot)
            lane.latest[slot] = op
        lane.wake.set()
        if self._running and (lane.task is None or lane.task.done()):
            lane.task = asyncio.get_running_loop().create_task(self._run(op.chat_id, lane))

    def _card_left_out(self, lane: _Lane, op: Op, slot: str) -> bool:
        """Whether ``op``, a card's last text, is left out with the card still waiting for its
        first send: its task ended and its answer waits too (the chat is behind).  The
        answer says what matters, as for a task too short for its card (``notify``), and
        the card is forgotten as shown so no later text of it follows the answer."""
        if not (isinstance(op, Live) and op.final and slot in lane.latest
                and not self._is_edit(op)):
            return False
        if not any(isinstance(item, (Post, Upload)) and item.urgent and item.session == op.session
                   for item in lane.queue):
            return False
        del lane.latest[slot]
        lane.queue.remove(slot)
        self.state.shown.pop(op.key, None)
        self.counters["folded"] += 1
        return True

    def pending(self) -> list[Op]:
        """Everything not yet sent, per chat in order (what a restart must not lose)."""
        return [op for lane in self._lanes.values() for op in lane.ops() if _kept(op)]

    def failing(self) -> bool:
        """Whether some chat's sending is retrying after network errors or 5xx."""
        return any(lane.backoff.counter for lane in self._lanes.values())

    def idle(self) -> bool:
        return not any(lane.queue or lane.inflight for lane in self._lanes.values())

    # -- running -----------------------------------------------------------------

    def start(self) -> None:
        """Start the lanes (in a running loop); what the last run left unsent goes first."""
        if self._restored:
            log.info("resending %d chat message(s) the last run left unsent", len(self._restored))
            self._restored = []
        self._running = True
        loop = asyncio.get_running_loop()
        for chat_id, lane in self._lanes.items():
            if lane.task is None or lane.task.done():
                lane.task = loop.create_task(self._run(chat_id, lane))

    async def close(self, grace: float = 3.0) -> None:
        """Give the lanes ``grace`` seconds to finish, then stop them; unsent work
        stays in ``pending()`` for the state file."""
        # real seconds (the sleeps are), whatever clock paces the lanes
        deadline = time.monotonic() + grace
        while not self.idle() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self._running = False
        for lane in self._lanes.values():
            lane.wake.set()  # a waiting lane sees it should stop
        # A call under way is let finish: cut off, whether Telegram showed it is unknown.
        deadline = time.monotonic() + INFLIGHT_GRACE
        while (any(lane.inflight is not None for lane in self._lanes.values())
               and time.monotonic() < deadline):
            await asyncio.sleep(0.02)
        await cancel_and_wait(lane.task for lane in self._lanes.values() if lane.task is not None)

    async def _run(self, chat_id: int, lane: _Lane) -> None:
        while self._running:
            if not lane.queue:
                lane.wake.clear()
                await lane.wake.wait()
                continue
            now = self._clock()
            if lane.paused_until > now:
                await self._sleep(lane, lane.paused_until - now)
                continue
            index, wait = self._next(chat_id, lane, now)
            if index is None:
                await self._sleep(lane, wait)
                continue
            item = lane.queue[index]
            op = lane.latest.pop(item) if isinstance(item, str) else item
            del lane.queue[index]
            # A new message, once sent, is saved as sent at once: sent again after a hard
            # kill it would show twice (an edit or a reaction repeats harmlessly).
            fresh = isinstance(op, (Post, Upload)) or (isinstance(op, Live)
                                                       and not self._is_edit(op))
            if fresh and isinstance(op, (Post, Live, Upload)):
                if op.sending:
                    op = _mark_repeat(op)  # the last call's outcome was unknown: never blindly again
                op = replace(op, sending=True)
            lane.inflight = op
            if fresh:
                self._on_change(True)  # saved before the call: a hard kill now leaves a mark
            try:
                left = await self._attempt(chat_id, lane, op)
            except asyncio.CancelledError:
                # Stopped mid-call: whether Telegram got it is unknown; keeping it (sent
                # again at the next start, marked as a possible repeat) beats losing it.
                self._requeue(lane, lane.inflight or op, 0)
                raise
            finally:
                lane.inflight = None
            if left is not None:
                self._requeue(lane, left, index)
            self._on_change(left is None and fresh)

    def _next(self, chat_id: int, lane: _Lane, now: float) -> tuple[int | None, float]:
        """The index of the op to send now, or (None, seconds to wait): the first turn owed
        to the person, else progress (module docstring, "Turns")."""
        group = chat_id < 0
        while lane.writes and now - lane.writes[0] > 60.0:
            lane.writes.popleft()
        while lane.posted and now - lane.posted[0][0] > FAIR_WINDOW:
            lane.posted.popleft()
        while self._recent and now - self._recent[0] >= 1.0:
            self._recent.popleft()
        if len(self._recent) >= GLOBAL_PER_SECOND:
            return None, 1.0 - (now - self._recent[0])
        if "action" in lane.latest and _send_wait(lane, group, now, False) > _EPSILON:
            # "typing…" is worth nothing late and must not spend what an answer needs
            del lane.latest["action"]
            lane.queue.remove("action")
        turns = self._turns(lane)
        flows = turns.owed or turns.heads
        if flows and self._fold(lane, turns.heads[_fair(lane, flows)]):
            turns = self._turns(lane)  # a flood at the head of the next turn went as one
        finals = turns.finals.get(lane.closing or "")
        if finals:
            # the turn whose answer just went ends with its card's last edit, before any other
            wait = max(_send_wait(lane, group, now, True), _edit_wait(lane, group, now, True))
            return (finals[0], 0.0) if wait <= _EPSILON else (None, wait)
        lane.closing = None
        if turns.owed:
            # The owed turn that goes first, whole: its session's messages in order up to
            # what is owed (the prompt's copy, the card, the answer), on the pace's reserve,
            # then its card's last edit.  Nothing else goes meanwhile.
            session = _fair(lane, turns.owed)
            index = turns.heads[session]
            if index != turns.owed[session] and _room(lane, group, now) < 2.0:
                self._ride(lane, index, turns.owed[session])
            wait = _send_wait(lane, group, now, True)
            if wait > _EPSILON:
                return None, wait
            if index == turns.owed[session]:
                lane.closing = session
            return index, 0.0
        return self._progress(lane, turns, group, now)

    def _fold(self, lane: _Lane, index: int) -> bool:
        """Whether the session whose message is at ``index`` had more than ``FOLD_AT``
        answers or notices in a row waiting there (the chat is far behind it): they become
        one message, ``folded_notice`` with the newest after it (its text, entities and
        buttons), in the place of the oldest."""
        head = lane.queue[index]
        if not _foldable(head):
            return False
        run = []
        for i in range(index, len(lane.queue)):
            item = lane.queue[i]
            op = lane.latest.get(item) if isinstance(item, str) else item
            if op is None or getattr(op, "session", None) != head.session \
                    or isinstance(op, (React, Action)) or _low(op) or self._is_edit(op):
                continue  # another's, or no message of its order
            if not _foldable(op):
                break
            run.append(i)
        if len(run) <= FOLD_AT:
            return False
        ops = [cast(Post, lane.queue[i]) for i in run]
        newest, count = ops[-1], len(ops) - 1
        with i18n.use(self._locale_for(head.chat_id)):
            words = folded_notice(head.session, count) + "\n\n"
        urgent, buzz = any(op.urgent for op in ops), any(op.buzz for op in ops)
        if u16_len(words + newest.text) <= TELEGRAM_LIMIT:
            shift = u16_len(words)
            told = replace(newest, text=words + newest.text, urgent=urgent, buzz=buzz,
                           folded=count, entities=tuple(
                               dict(e, offset=int(e.get("offset", 0)) + shift)
                               for e in newest.entities))
            run_out = run
        else:  # the count alone, the newest as it was after it
            told = Post(head.chat_id, words.strip(), session=head.session, urgent=urgent,
                        buzz=buzz, folded=count)
            run_out = run[:-1]
        for i in reversed(run_out):
            del lane.queue[i]
        lane.queue.insert(run[0], told)
        self.counters["folded"] += count
        return True

    def _ride(self, lane: _Lane, index: int, owed: int) -> None:
        """The pace has no room for a turn's silent message (the prompt's copy) and the owed
        one after it (the answer) apart: the first carries the second (text, entities,
        buzz), when both are plain posts that fit in one message."""
        first, second = lane.queue[index], lane.queue[owed]
        # only a prompt's copy carries its answer: other posts (a reply to a command, a
        # notice) stay the messages they are
        if not (isinstance(first, Post) and isinstance(second, Post) and first.session
                and first.key.startswith(private.PROMPT_KEY_PREFIX) and not first.urgent
                and first.markup is None and second.markup is None and not second.key
                and not first.sending and not second.sending):
            return
        for i in range(index + 1, owed):  # nothing of the session's own between them
            item = lane.queue[i]
            op = lane.latest.get(item) if isinstance(item, str) else item
            if getattr(op, "session", None) == first.session and not (
                    op is None or self._is_edit(op) or isinstance(op, (React, Action))):
                return
        head = first.text + "\n\n"
        if u16_len(head + second.text) > TELEGRAM_LIMIT:
            return
        shift = u16_len(head)
        lane.queue[index] = replace(
            first, text=head + second.text, urgent=True, buzz=first.buzz or second.buzz,
            reply_to=first.reply_to or second.reply_to,
            entities=first.entities + tuple(dict(e, offset=int(e.get("offset", 0)) + shift)
                                            for e in second.entities))
        del lane.queue[owed]
        self.counters["folded"] += 1

    def _turns(self, lane: _Lane) -> _Turns:
        turns = _Turns()
        for i, item in enumerate(lane.queue):
            op = lane.latest.get(item) if isinstance(item, str) else item
            if op is None:
                continue
            if _low(op):
                if turns.low is None:
                    turns.low = i  # a reply to a stranger goes when nothing else waits
            elif isinstance(op, (React, Action)):
                if turns.other is None:
                    turns.other = i
            elif self._is_edit(op):
                turns.edits.append((i, op))
                if op.final and not op.background:
                    turns.finals.setdefault(op.session, []).append(i)
            else:
                turns.heads.setdefault(op.session, i)
                if isinstance(op, (Post, Upload)) and op.urgent:
                    turns.owed.setdefault(op.session, i)
        return turns

    def _progress(self, lane: _Lane, turns: _Turns, group: bool,
                  now: float) -> tuple[int | None, float]:
        """Nothing owed waits: the first of what may go now (an edit, the fair session's next
        message, a reaction), leaving the pace's reserve; the status line when no card
        edit is ready, a stranger's reply when nothing else waits."""
        ready: list[int] = []
        waits: list[float] = []
        deferred = None
        for i, op in turns.edits:
            wait = max(_edit_wait(lane, group, now, op.final),
                       _send_wait(lane, group, now, op.final))  # a last edit takes the reserve
            if wait > _EPSILON:
                waits.append(wait)
            elif not op.background:
                ready.append(i)
                break
            elif deferred is None:
                deferred = i  # the status line goes when no card edit waits
        send_wait = _send_wait(lane, group, now, False)
        for index in (turns.heads[_fair(lane, turns.heads)] if turns.heads else None,
                      turns.other):
            if index is None:
                continue
            if send_wait <= _EPSILON:
                ready.append(index)
            else:
                waits.append(send_wait)
        if ready:
            return min(ready), 0.0
        if deferred is not None:
            return deferred, 0.0
        if waits:
            return None, min(waits)
        if turns.low is not None:
            # Strangers never use the half of a group's minute the team may need.
            if group and len(lane.writes) >= LOW_SENDS_PER_MINUTE:
                return None, 60.0 - (now - lane.writes[-LOW_SENDS_PER_MINUTE])
            return turns.low, 0.0
        return None, 0.05

    def _is_edit(self, op: Op) -> TypeGuard[Live]:
        return isinstance(op, Live) and self.state.live_id(op.key, op.chat_id) is not None

    def _requeue(self, lane: _Lane, op: Op, index: int) -> None:
        slot = _slot(op)
        if slot is None:
            lane.queue.insert(index, op)
        elif slot not in lane.latest:  # a newer version arrived meanwhile: it wins
            lane.latest[slot] = op
            lane.queue.insert(index, slot)

    async def _sleep(self, lane: _Lane, seconds: float) -> None:
        lane.wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(lane.wake.wait(), max(0.01, seconds))

    # -- one attempt ---------------------------------------------------------------

    async def _attempt(self, chat_id: int, lane: _Lane, op: Op) -> Op | None:
        """Send ``op`` once.  None: done (sent, or dropped for good); else the op to try
        again (details Telegram refused left out)."""
        from aiogram import exceptions as tg

        try:
            for _ in range(3):  # a refused detail (entities, reply, gone message) retries at once
                again = await self._send(lane, op)
                if again is None:
                    break
                op = lane.inflight = again
        except tg.TelegramRetryAfter as exc:
            self.counters["rate_limited"] += 1
            lane.paused_until = self._clock() + max(1, exc.retry_after)
            log.warning("Telegram asks to slow down in chat %s: waiting %s s", chat_id,
                        exc.retry_after)
            return _unsent(op)  # Telegram answered: nothing was shown
        except (tg.TelegramNetworkError, tg.TelegramServerError, asyncio.TimeoutError,
                OSError) as exc:
            if isinstance(exc, tg.TelegramServerError) or _never_connected(exc):
                op = _unsent(op)  # Telegram refused, or was never reached
            self.counters["retries"] += 1
            delay = next(lane.backoff)
            if lane.backoff.counter == 1:
                log.warning("cannot reach Telegram (%s); retrying, the chat will catch up",
                            _short(exc))
            lane.paused_until = self._clock() + delay
            return op
        except tg.TelegramUnauthorizedError:
            log.error("Telegram rejects the bot token; fix it with `aipager config token`")
            lane.paused_until = self._clock() + 60.0
            return op
        except tg.TelegramAPIError as exc:
            self.counters["dropped"] += 1
            log.error("Telegram refused a %s in chat %s: %s", op.kind, chat_id, _short(exc))
            told = isinstance(op, Upload) or (isinstance(op, Post) and not op.low
                                              and not op.refusal)
            if told and not isinstance(exc, tg.TelegramForbiddenError):
                # nothing is dropped without the person hearing of it
                with i18n.use(self._locale_for(chat_id)):
                    text = refused_notice(_short(exc))
                self._queue(Post(chat_id, text, buzz=isinstance(op, Post) and op.buzz,
                                 refusal=True))
            return None
        except Exception:  # noqa: BLE001 - a bug must not stop the lane
            self.counters["dropped"] += 1
            log.exception("sending a %s to chat %s failed", op.kind, chat_id)
            return None
        if lane.backoff.counter:
            log.info("Telegram reachable again")
            lane.backoff.reset()
        return None

    async def _send(self, lane: _Lane, op: Op) -> Op | None:
        """One API call for ``op``; the op to send again at once when Telegram refused a
        detail that can be left out (None: done)."""
        from aiogram.exceptions import TelegramBadRequest

        try:
            await self._call(lane, op)
        except TelegramBadRequest as exc:
            text = str(exc).lower()
            if "not modified" in text:
                return None
            match op:
                case Live() if ("message to edit not found" in text or "can't be edited" in text
                                or "message_id_invalid" in text):
                    self.state.forget_live(op.key)  # deleted in the chat: show it anew
                    return op
                case Post(entities=entities) if entities and ("entit" in text
                                                              or "can't parse" in text):
                    return replace(op, entities=())
                case Post(reply_to=int()) | Live(reply_to=int()) if "repl" in text:
                    return replace(op, reply_to=None)
                case React() if "reaction" in text or "not found" in text:
                    return None  # the message is gone or reactions are off: nothing to do
                case Post(entities=entities) if entities:
                    # refused for another reason: plain text is the safer form
                    return replace(op, entities=())
                case Post(markup=dict()) | Live(markup=dict()):
                    return replace(op, markup=None)
            raise
        return None

    async def _call(self, lane: _Lane, op: Op) -> None:
        match op:
            case Action(chat_id=chat_id, action=action):
                self._spend(lane)
                with contextlib.suppress(Exception):
                    await self.bot.send_chat_action(chat_id, action or "typing")
            case React(chat_id=chat_id, msg_id=msg_id, emoji=emoji):
                from aiogram.types import ReactionTypeEmoji

                self._spend(lane)
                await self.bot.set_message_reaction(chat_id, msg_id,
                                                    reaction=[ReactionTypeEmoji(emoji=emoji)])
                if emoji == "👀" and os.environ.get("AIPAGER_TEST_CRASH_AT") == "chat.eyes":
                    os.kill(os.getpid(), signal.SIGKILL)  # tests only: between 👀 and 👍
            case Live() if self._is_edit(op):
                if self._showing.get(op.key) == (op.chat_id, op.text, op.markup):
                    self.counters["unchanged"] += 1
                    return
                await self._edit(lane, op)
            case Upload():
                await self._upload(lane, op)
            case Post() | Live():
                await self._post(lane, op)

    async def _edit(self, lane: _Lane, op: Live) -> None:
        from aiogram.types import InlineKeyboardMarkup, LinkPreviewOptions

        lane.spend_edit(self._clock(), EDIT_GAP_GROUP if op.chat_id < 0 else EDIT_GAP)
        self._spend(lane)
        try:
            edit: dict[str, Any] = dict(  # (aiogram's types make every field required for mypy)
                text=op.text, chat_id=op.chat_id,
                message_id=self.state.live_id(op.key, op.chat_id),
                reply_markup=InlineKeyboardMarkup.model_validate(op.markup) if op.markup else None,
                link_preview_options=LinkPreviewOptions(is_disabled=True))
            await self.bot(EditMessageTextRaw(**edit))
        finally:
            lane.edit_answered(self._clock())
        self.counters["edited"] += 1
        self._shows(op)

    def _shows(self, op: Live) -> None:
        """Telegram shows ``op`` now (``_showing``)."""
        self._showing[op.key] = (op.chat_id, op.text, op.markup)
        self._showing.move_to_end(op.key)
        while len(self._showing) > LIVE_KEPT:
            self._showing.popitem(last=False)

    def _spend(self, lane: _Lane) -> None:
        """A write counts against the chat's pace and the bot's (``_next``)."""
        now = self._clock()
        lane.writes.append(now)
        lane.spend(now)
        self._recent.append(now)

    async def _post(self, lane: _Lane, op: Post | Live) -> None:
        """A new message: a post, or a live message shown for the first time."""
        from aiogram.types import InlineKeyboardMarkup, LinkPreviewOptions, MessageEntity

        self._spend(lane)
        lane.posted.append((self._clock(), op.session))
        entities = op.entities if isinstance(op, Post) else ()
        post: dict[str, Any] = dict(  # (aiogram's types make every field required for mypy)
            chat_id=op.chat_id, text=op.text,
            entities=[MessageEntity(**e) for e in entities] or None,
            reply_markup=InlineKeyboardMarkup.model_validate(op.markup) if op.markup else None,
            reply_parameters=_reply(op.reply_to),
            link_preview_options=LinkPreviewOptions(is_disabled=True),
            disable_notification=not (isinstance(op, Post) and op.buzz))
        sent: Any = await self.bot(SendMessageRaw(**post))  # (the answer's JSON object)
        message_id = int(sent["message_id"])
        self.counters["sent"] += 1
        if op.session:
            self.state.route(op.chat_id, message_id, op.session)
        if op.key:
            self.state.set_live(op.key, op.chat_id, message_id)
            if isinstance(op, Live):
                self._shows(op)
        if isinstance(op, Live) and op.pin:
            # not counted: once per chat, with the status line's first send
            try:
                await self.bot.pin_chat_message(op.chat_id, message_id,
                                                disable_notification=True)
            except Exception as exc:  # noqa: BLE001 - no right to pin: the line still works
                log.warning("cannot pin the status line in chat %s: %s", op.chat_id, _short(exc))

    async def _upload(self, lane: _Lane, op: Upload) -> None:
        from aiogram.types import BufferedInputFile, FSInputFile

        self._spend(lane)
        lane.posted.append((self._clock(), op.session))
        upload: FSInputFile | BufferedInputFile
        if op.path:
            if not os.path.isfile(op.path):
                raise FileGone(op.path)  # not an OSError: that would be retried
            upload = FSInputFile(op.path, filename=op.filename or "file")
        else:
            upload = BufferedInputFile(op.data, filename=op.filename or "file")
        send = self.bot.send_photo if op.photo else self.bot.send_document
        sent = await send(op.chat_id, upload, caption=op.caption[:1024] or None,
                          disable_notification=True)
        self.counters["sent"] += 1
        if op.path:
            with contextlib.suppress(OSError):
                os.unlink(op.path)  # the private copy has done its job
        if op.session:
            self.state.route(op.chat_id, sent.message_id, op.session)


def _send_wait(lane: _Lane, group: bool, now: float, urgent: bool) -> float:
    """Seconds until a write may go: the others leave ``SEND_RESERVE`` of the
    chat's pace to those owed to the person (an answer after a burst of cards)."""
    reserve = 0 if urgent else SEND_RESERVE
    if group:
        limit = GROUP_SENDS_PER_MINUTE - reserve
        if len(lane.writes) >= limit:
            return 60.0 - (now - lane.writes[len(lane.writes) - limit])
        return 0.0
    return max(0.0, (1.0 + reserve - lane.tokens(now)) / PRIVATE_PER_SECOND)


def _edit_wait(lane: _Lane, group: bool, now: float, final: bool) -> float:
    """Seconds until an edit may go: a progress edit needs the edit bucket full (it leaves
    one edit to a last edit, ``EDIT_BURST``), a last edit one edit."""
    gap = EDIT_GAP_GROUP if group else EDIT_GAP
    need = 1.0 if final else float(EDIT_BURST)
    return max(0.0, (need - lane.edit_tokens(now, gap)) * gap)


def _room(lane: _Lane, group: bool, now: float) -> float:
    """Writes the chat's pace allows now."""
    if group:
        return float(GROUP_SENDS_PER_MINUTE - len(lane.writes))
    return lane.tokens(now)


def _fair(lane: _Lane, ranks: dict[str, int]) -> str:
    """The session whose turn it is among ``ranks`` (session → the queue index of what it
    waits to send): the earliest, unless its host, or it, had ``FAIR_SLACK`` more new
    messages in the last ``FAIR_WINDOW`` than another waiting one: then that one's."""
    if len(ranks) == 1:
        return next(iter(ranks))
    by_session: dict[str, int] = {}
    by_host: dict[str, int] = {}
    for _at, session in lane.posted:
        by_session[session] = by_session.get(session, 0) + 1
        by_host[_host(session)] = by_host.get(_host(session), 0) + 1
    pool = list(ranks)
    for used in (lambda s: by_host.get(_host(s), 0), lambda s: by_session.get(s, 0)):
        least = min(map(used, pool))
        pool = [s for s in pool if used(s) <= least + FAIR_SLACK]
    return min(pool, key=ranks.__getitem__)


class FileGone(Exception):
    """The private copy of a file to upload is no longer there (dropped, logged)."""


def _low(op: Op | str) -> bool:
    """A reply to a stranger (queued items may also be slot names)."""
    return isinstance(op, Post) and op.low


def _unsent(op: Op) -> Op:
    """``op`` known not to have been shown (Telegram answered with a refusal, or was never
    reached): sent again, it needs no ``REPEAT_MARK``."""
    if isinstance(op, (Post, Live, Upload)) and op.sending:
        return replace(op, sending=False)
    return op


def _reply(message_id: int | None) -> Any:
    from aiogram.types import ReplyParameters

    if not message_id:
        return None
    return ReplyParameters(message_id=message_id, allow_sending_without_reply=True)


def _mark_repeat(op: Post | Live | Upload) -> Post | Live | Upload:
    """``op`` headed with ``REPEAT_MARK`` (once), its entities moved along."""
    match op:
        case Upload(caption=caption) if not caption.startswith(REPEAT_MARK):
            return replace(op, caption=REPEAT_MARK + caption)
        case Live(text=text) if not text.startswith(REPEAT_MARK):
            return replace(op, text=REPEAT_MARK + text)
        case Post(text=text, entities=entities) if not text.startswith(REPEAT_MARK):
            shift = u16_len(REPEAT_MARK)
            return replace(op, text=REPEAT_MARK + text, entities=tuple(
                dict(e, offset=int(e.get("offset", 0)) + shift) for e in entities))
    return op


def _never_connected(exc: BaseException) -> bool:
    """A network error that happened before the request reached Telegram (aiogram names
    aiohttp's error in its message): sending again cannot show it twice."""
    text = str(exc)
    return "ClientConnectorError" in text or "Cannot connect" in text


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
