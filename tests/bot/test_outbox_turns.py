"""The outbox's turns on its own clock (issue 46, items 2 and 3): answers in the order their
tasks finished, each after its own prompt and card; every host and session its share of
the chat's pace; a session's backlog folded into a count and its newest messages.

A bot that answers every write at once stands in for Telegram (the fake Bot API's failures
are ``test_outbox``'s); the outbox's clock moves only when the test moves it, so what is
checked is the order and the pace the outbox chose, never how fast this machine is."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from aipager.bot.chatstate import ChatState
from aipager.bot.markdown import u16_len
from aipager.bot.outbox import PRIVATE_BURST, SEND_RESERVE, Live, Outbox, Post

CHAT = 4242


class _Bot:
    """Takes every write at once and records it: (outbox clock, method, text, message id)."""

    def __init__(self, clock: Any) -> None:
        self._clock = clock
        self._id = 0
        self.writes: list[tuple[float, str, str, int | None]] = []
        #: a message's text → its entities, as sent
        self.entities: dict[str, list[Any]] = {}

    async def __call__(self, method: Any) -> dict:
        """A method object (the outbox's ``rawmethods``: a post or an edit)."""
        self._id += 1
        edited = getattr(method, "message_id", None)
        self.writes.append((self._clock(), method.__api_method__, method.text, edited))
        self.entities[method.text] = list(getattr(method, "entities", None) or [])
        return {"message_id": edited or self._id}

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> Any:
            self._id += 1
            self.writes.append((self._clock(), name, str(kwargs.get("caption") or ""), None))
            return SimpleNamespace(message_id=self._id)

        return call

    def texts(self, since: int = 0) -> list[str]:
        """Texts of the messages and edits, in the order they were made."""
        return [text for _t, method, text, _id in self.writes[since:]
                if method in ("sendMessage", "editMessageText")]


class _Chat:
    """An outbox on a clock of its own (``now``) with ``_Bot`` behind it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.bot = _Bot(lambda: self.now)
        self.box = Outbox(self.bot, ChatState(), clock=lambda: self.now)
        self.box.start()

    async def settle(self) -> None:
        """Let the lanes send what the clock allows now."""
        for _ in range(30):
            await asyncio.sleep(0)
        await asyncio.sleep(0.02)
        for _ in range(30):
            await asyncio.sleep(0)

    async def run(self, seconds: float, step: float = 0.25) -> None:
        """Move the clock ``seconds`` forward in ``step``s, the lanes sending as they may."""
        await self.settle()
        for _ in range(round(seconds / step)):
            self.now += step
            for lane in self.box._lanes.values():
                lane.wake.set()
            await self.settle()

    def spend_burst(self) -> int:
        """Other sessions' cards take the burst progress may use (down to the reserve)."""
        burst = PRIVATE_BURST - SEND_RESERVE
        for i in range(burst):
            self.box.put(Live(CHAT, f"⏳ busy{i} · working", key=f"card:busy{i}:1",
                              session=f"claude-busy{i}"))
        return burst

    def sent_at(self, text: str) -> float:
        return next((t for t, _m, written, _id in self.bot.writes if written == text),
                    float("inf"))

    async def close(self) -> None:
        await self.box.close(0.1)


def _answer(session: str) -> str:
    return f"{session.removeprefix('claude-')}\nthe answer"


async def test_answers_go_in_finish_order_and_a_card_never_shown_is_left_out():
    """The issue's 100-session minute in small: m0's task ran long enough for its card to be
    queued, then ten tasks end, m0's first.  m0's answer goes first and the others follow
    in the order their tasks ended, one a second.  Before, m0's card waited for a pause in
    the answers (progress leaves the reserve to them) and held m0's answer behind all the
    later ones.  The card, never shown, is left out, as a task too short for its card is:
    it would only push the answer up."""
    chat = _Chat()
    burst = chat.spend_burst()
    await chat.settle()
    assert len(chat.bot.writes) == burst
    chat.box.put(Live(CHAT, "⏳ m0 · working", key="card:claude-m0:1", session="claude-m0"))
    chat.box.state.show("card:claude-m0:1", "⏳ m0 · working", "stop")  # as notify does
    await chat.settle()
    start = chat.now
    for i in range(10):
        session = f"claude-m{i}"
        chat.box.put(Post(CHAT, _answer(session), session=session), urgent=True)
        if i == 0:
            chat.box.put(Live(CHAT, "✅ m0 · done", key="card:claude-m0:1", session=session,
                              final=True))
    await chat.run(20)
    texts = chat.bot.texts(burst)
    assert texts == [_answer(f"claude-m{i}") for i in range(10)]
    assert chat.sent_at(_answer("claude-m0")) - start <= 0.0  # on the reserve
    assert chat.sent_at(_answer("claude-m9")) - start <= 9.0  # then one a second
    assert chat.box.state.shown_text("card:claude-m0:1") is None  # no later text follows
    await chat.close()


async def test_an_answer_never_goes_before_its_own_prompt_while_another_card_waits():
    """A card of one session waits for the pace; another session's copy of its prompt (typed at
    the computer) and its answer come after it.  The answer may go past the waiting card,
    never past its own prompt.  Before, the prompt was skipped as "behind a waiting card"
    and the answer went first.  With no room in the pace for both, the prompt carries the
    answer in one message; with room, each is its own."""
    chat = _Chat()
    prompt = "⌨️ s · typed at the computer:\nhello"
    chat.box.put(Post(CHAT, prompt, key="typed:claude-s:1", session="claude-s"))
    chat.box.put(Post(CHAT, _answer("claude-s"), session="claude-s"), urgent=True)
    await chat.settle()
    assert chat.bot.texts() == [prompt, _answer("claude-s")]  # a full burst: room for both
    await chat.run(10)
    mark = chat.spend_burst()
    await chat.settle()
    mark += 2
    chat.box.put(Live(CHAT, "⏳ t · working", key="card:claude-t:1", session="claude-t"))
    chat.box.put(Post(CHAT, prompt, key="typed:claude-s:2", session="claude-s"))
    bold = {"type": "bold", "offset": 0, "length": 1}  # the answer's label
    chat.box.put(Post(CHAT, _answer("claude-s"), session="claude-s", entities=(bold,)),
                 urgent=True)
    await chat.run(6)
    both = f"{prompt}\n\n{_answer('claude-s')}"
    assert chat.bot.texts(mark) == [both, "⏳ t · working"]
    [moved] = chat.bot.entities[both]
    assert (moved.offset, moved.length) == (u16_len(f"{prompt}\n\n"), 1)
    assert chat.box.state.live_id("typed:claude-s:2") is not None  # the card replies to it
    await chat.close()


async def test_each_answer_is_followed_by_its_cards_end_before_any_other_answer():
    """Three tasks end together; the edit pace lets one last edit go at once and the others a
    gap apart.  Each answer goes, then its own card's last edit, before the next answer:
    no card still says "working" while later answers arrive under it.  Before, the answers
    went first and the cards caught up a gap apart after them."""
    chat = _Chat()
    names = ("ann", "bob", "cid")
    for name in names:
        chat.box.put(Live(CHAT, f"⏳ {name} · working", key=f"card:claude-{name}:1",
                          session=f"claude-{name}"))
    await chat.run(3)
    chat.box.put(Live(CHAT, "⏳ ann · working · 3s", key="card:claude-ann:1",
                      session="claude-ann"))
    await chat.settle()  # a progress edit: the edit bucket keeps one for a last edit
    mark = len(chat.bot.writes)
    for name in names:
        session = f"claude-{name}"
        chat.box.put(Post(CHAT, _answer(session), session=session), urgent=True)
        chat.box.put(Live(CHAT, f"✅ {name} · done", key=f"card:{session}:1", session=session,
                          final=True))
    await chat.run(6)
    assert chat.bot.texts(mark) == [text for name in names
                                    for text in (_answer(f"claude-{name}"), f"✅ {name} · done")]
    await chat.close()


async def test_a_busy_host_leaves_the_others_their_share():
    """Forty sessions of one host ("box") end at once; a task of another host ("lap") ends
    just after.  Its answer goes within the fair share of the pace (the box host has taken
    more than ``FAIR_SLACK`` in the last minute), not after the forty."""
    from aipager.bot.outbox import FAIR_SLACK

    chat = _Chat()
    for i in range(40):
        session = f"claude-s{i}@box"
        chat.box.put(Post(CHAT, _answer(session), session=session), urgent=True)
    await chat.run(2)
    start = chat.now
    chat.box.put(Post(CHAT, _answer("claude-b@lap"), session="claude-b@lap"), urgent=True)
    await chat.run(FAIR_SLACK + 2)
    assert chat.sent_at(_answer("claude-b@lap")) - start <= FAIR_SLACK + 1.0
    await chat.run(40)
    box = [text for text in chat.bot.texts() if text.endswith("@box\nthe answer")]
    assert box == [_answer(f"claude-s{i}@box") for i in range(40)]  # in the order they ended
    await chat.close()


async def test_a_busy_session_leaves_the_others_of_its_host_their_share():
    """One session has nine notices waiting; another session of the same machine then
    answers.  The answer goes once the busy one has had its share, not after its nine."""
    from aipager.bot.outbox import FAIR_SLACK

    chat = _Chat()
    for i in range(9):
        chat.box.put(Post(CHAT, f"⚠️ busy · notice {i}", session="claude-busy"), urgent=True)
    chat.box.put(Post(CHAT, _answer("claude-b"), session="claude-b"), urgent=True)
    await chat.run(20)
    texts = chat.bot.texts()
    assert texts.index(_answer("claude-b")) <= FAIR_SLACK + 1
    assert [t for t in texts if "notice" in t] == [f"⚠️ busy · notice {i}" for i in range(9)]
    await chat.close()


async def test_a_sessions_flood_is_folded_into_a_count_and_its_newest_message():
    """A session floods the chat with 300 notices, faster than the pace.  Instead of
    trickling out for five minutes, each of its turns with more than ``FOLD_AT`` waiting
    is one message: how many were left out, then the newest; within half a minute nothing
    of it waits, the last notice shown is the last one put, and another session's answer
    is not held behind any of it.  A run of ``FOLD_AT`` or fewer is not folded."""
    from aipager.bot.outbox import FOLD_AT

    chat = _Chat()
    for i in range(300):
        chat.box.put(Post(CHAT, f"⚠️ loud · notice {i}", session="claude-loud"), urgent=True)
        if i % 10 == 9:
            await chat.run(0.5)
    chat.box.put(Post(CHAT, _answer("claude-b"), session="claude-b"), urgent=True)
    await chat.run(30)
    assert chat.box.idle()
    texts = chat.bot.texts()
    loud = [t for t in texts if "loud" in t]
    told = [t for t in loud if t.startswith("📦 loud · ")]
    assert told and len(loud) <= 40  # not 300
    left_out = sum(int(t.split(" · ")[1].split()[0].replace(",", "")) for t in told)
    shown = [int(t.rsplit("notice ", 1)[1]) for t in loud]
    assert left_out + len(shown) == 300  # each notice shown or counted, once
    assert shown == sorted(shown) and shown[-1] == 299  # in order, the newest last
    assert _answer("claude-b") in texts
    await chat.close()
    chat = _Chat()
    for i in range(FOLD_AT):
        chat.box.put(Post(CHAT, f"⚠️ calm · notice {i}", session="claude-calm"), urgent=True)
    await chat.run(FOLD_AT)
    assert chat.bot.texts() == [f"⚠️ calm · notice {i}" for i in range(FOLD_AT)]
    await chat.close()


async def test_a_burst_of_tasks_typed_at_the_terminal_folds_prompts_and_answers_alike():
    """A session runs 100 short tasks typed at its terminal in ten seconds: each is the
    prompt's silent copy and its answer.  A copy is not a live message (nothing edits it),
    so its run folds as notices do: the chat is current within a minute, the newest answer
    shown last, every copy and answer shown or counted once (seen in ``bench/fleet.py``,
    where one turn a second kept a hub's chat 1,000 s behind)."""
    from aipager.bot import private

    chat = _Chat()
    for i in range(100):
        chat.box.put(Post(CHAT, f"⌨️ loop · typed at the computer:\ntask {i}",
                          key=private.prompt_key("claude-loop", i), session="claude-loop"))
        chat.box.put(Post(CHAT, f"loop\nanswer {i}.", session="claude-loop"), urgent=True)
        if i % 10 == 9:
            await chat.run(1.0)
    await chat.run(60)
    assert chat.box.idle()
    texts = [t for t in chat.bot.texts() if "loop" in t]
    assert len(texts) <= 30, len(texts)
    assert texts[-1].endswith("answer 99.")
    told = [t for t in texts if t.startswith("📦 loop · ")]
    left_out = sum(int(t.split(" · ")[1].split()[0].replace(",", "")) for t in told)
    shown = sum(t.count("task ") + t.count("answer ") for t in texts)
    assert left_out + shown == 200
    await chat.close()
