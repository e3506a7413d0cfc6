"""The outbox against the fake Bot API's failures: 429, outages, "not modified",
deleted messages, refused entities; order, coalescing, and what a restart keeps."""

from __future__ import annotations

import asyncio
import contextlib

import orjson
import pytest
from bot.conftest import eventually
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI

from aipager import botapi
from aipager.bot.chatstate import ChatState
from aipager.bot.outbox import (LOW_KEPT, LOW_SENDS_PER_MINUTE, PRIVATE_BURST, REPEAT_MARK,
                                 SEND_RESERVE, Action, Live, Outbox, Post, React,
                                 Upload)
from aipager.bot.ops import from_json

OTHER = {"id": 5151, "is_bot": False, "first_name": "Other", "username": "other"}


@pytest.fixture
async def box():
    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    fake.add_private_chat(OTHER)
    async with fake.running() as base:
        bot = botapi.build_bot(TOKEN, base)
        outbox = Outbox(bot, ChatState())
        outbox.start()
        try:
            yield fake, outbox
        finally:
            await outbox.close(0.5)
            with contextlib.suppress(Exception):
                await bot.session.close()


def _texts(fake, method, chat=OWNER["id"]):
    return [p["text"] for p in fake.calls_of(method, ok=True) if int(p["chat_id"]) == chat]


async def test_posts_go_out_in_order(box):
    fake, outbox = box
    for i in range(7):  # past the private chat's burst: paced, still in order
        outbox.put(Post(OWNER["id"], f"message {i}"))
    await eventually(outbox.idle, timeout=10, what="all sent")
    await eventually(lambda: len(_texts(fake, "sendMessage")) == 7)
    assert _texts(fake, "sendMessage") == [f"message {i}" for i in range(7)]


async def test_a_429_pauses_only_that_chat_and_the_message_still_arrives_once(box):
    fake, outbox = box
    fake.fail("sendMessage", 429, retry_after=1)
    outbox.put(Post(OWNER["id"], "slow down"))
    await fake.wait_for("sendMessage", ok=False)
    outbox.put(Post(OTHER["id"], "other chat goes on"))
    other = await fake.wait_for("sendMessage", lambda p: p["text"] == "other chat goes on")
    # The other chat was served while the first waited out its retry_after.
    assert not _texts(fake, "sendMessage")
    assert other
    await fake.wait_for("sendMessage", lambda p: p["text"] == "slow down", timeout=5)
    assert _texts(fake, "sendMessage") == ["slow down"]
    assert outbox.counters["rate_limited"] == 1


async def test_an_outage_coalesces_card_edits_and_converges_on_the_last_text(box):
    fake, outbox = box
    outbox.put(Live(OWNER["id"], "⏳ jim · working · 1s", key="card:jim:1"))
    await fake.wait_for("sendMessage")
    fake.set_outage(True)
    for i in range(2, 40):
        outbox.put(Live(OWNER["id"], f"⏳ jim · working · {i}s", key="card:jim:1"))
        await asyncio.sleep(0.01)
    outbox.put(Post(OWNER["id"], "the answer"))
    outbox.put(Live(OWNER["id"], "✅ jim · done · 40s", key="card:jim:1"))
    await fake.wait_for("editMessageText", ok=False)
    fake.set_outage(False)
    await fake.wait_for("sendMessage", lambda p: p["text"] == "the answer", timeout=20)
    await eventually(lambda: "✅ jim · done · 40s" in _texts(fake, "editMessageText"), 20)
    edits = _texts(fake, "editMessageText")
    assert edits[-1] == "✅ jim · done · 40s"
    assert len(edits) <= 3, edits  # coalesced: not one edit per update
    stored = fake.bot_messages(OWNER["id"])
    assert [m["text"] for m in stored] == ["✅ jim · done · 40s", "the answer"]
    assert _texts(fake, "sendMessage").count("the answer") == 1


async def test_not_modified_is_done_and_a_deleted_card_is_sent_again(box):
    fake, outbox = box
    outbox.put(Live(OWNER["id"], "card v1", key="k"))
    first = await fake.wait_for("sendMessage")
    mid = outbox.state.live_id("k")
    assert mid is not None
    # a changed text, then the old one again before the lane ran: coalesced into the
    # text the card shows, so no edit at all (Telegram would refuse it as not modified)
    outbox.put(Live(OWNER["id"], "card v1 changed", key="k"))
    outbox.put(Live(OWNER["id"], "card v1", key="k"))
    await eventually(outbox.idle)
    assert not fake.calls_of("editMessageText") and outbox.counters["unchanged"] == 1
    # after a restart that memory is gone: Telegram's "not modified" is done, not retried
    again = Outbox(outbox.bot, outbox.state)
    again.start()
    try:
        again.put(Live(OWNER["id"], "card v1", key="k"))
        await fake.wait_for("editMessageText", ok=False)
        await eventually(again.idle)
    finally:
        await again.close(0.5)
    assert len(fake.calls_of("editMessageText")) == 1  # not retried
    del fake.messages[(OWNER["id"], mid)]  # the person deleted the card
    outbox.put(Live(OWNER["id"], "card v2", key="k"))
    await fake.wait_for("sendMessage", lambda p: p["text"] == "card v2")
    assert outbox.state.live_id("k") != mid
    assert first


async def test_refused_entities_and_a_gone_reply_target_do_not_lose_the_message(box):
    fake, outbox = box
    fake.fail("sendMessage", 400, "Bad Request: can't parse entities: Can't find end of the entity")
    outbox.put(Post(OWNER["id"], "**bold**", entities=({"type": "bold", "offset": 0,
                                                                 "length": 4},), reply_to=99999))
    sent = await fake.wait_for("sendMessage")
    assert sent["text"] == "**bold**" and not sent.get("entities")


async def test_a_permanent_refusal_is_dropped_not_retried_forever(box):
    fake, outbox = box
    fake.fail("sendMessage", 403, "Forbidden: bot was blocked by the user", times=5)
    outbox.put(Post(OWNER["id"], "nobody reads this"))
    outbox.put(Post(OWNER["id"], "next"))
    await eventually(outbox.idle)
    assert len(fake.calls_of("sendMessage", ok=False)) == 2
    assert outbox.counters["dropped"] == 2


async def test_reactions_coalesce_per_message(box):
    fake, outbox = box
    msg = await fake.user_says("hi")
    fake.set_outage(True)
    outbox.put(React(OWNER["id"], msg["message_id"], "👀"))
    await fake.wait_for("setMessageReaction", ok=False)
    outbox.put(React(OWNER["id"], msg["message_id"], "👍"))
    fake.set_outage(False)
    await fake.wait_for("setMessageReaction", timeout=10)
    await eventually(outbox.idle)
    assert [p["reaction"][0]["emoji"] for p in fake.calls_of("setMessageReaction", ok=True)] == ["👍"]


async def test_unsent_work_is_kept_for_the_next_start(box):
    fake, outbox = box
    fake.set_outage(True)
    outbox.put(Post(OWNER["id"], "answer one"))
    outbox.put(Live(OWNER["id"], "card", key="c"))
    outbox.put(Upload(OWNER["id"], "a.md", caption="caption", data=b"# full\n"))
    await fake.wait_for("sendMessage", ok=False)
    # through the state file's JSON, as a restart reads it
    saved = ChatState(pending=outbox.pending()).to_json()
    assert [p["kind"] for p in saved["pending"]] == ["post", "live", "upload"]
    fake.set_outage(False)
    state = ChatState.from_json(orjson.loads(orjson.dumps(saved)))
    other = Outbox(outbox.bot, state)
    outbox._running = False  # the old process is gone
    other.start()
    await fake.wait_for("sendDocument", timeout=10)
    upload = fake.uploads[-1]
    assert upload["data"] == b"# full\n" and upload["filename"] == "a.md"
    await other.close(2)


async def test_work_queued_before_start_and_the_last_runs_leftovers_each_go_once(box):
    # A restarted daemon replays its spool (queueing answers, saving the state) before the
    # bot's outbox starts: the save must keep both, and the start must not send twice.
    fake, outbox = box
    state = ChatState(pending=[Post(OWNER["id"], "left over")])
    other = Outbox(outbox.bot, state)
    other.put(Post(OWNER["id"], "replayed answer"), urgent=True)
    saved = [op.to_json() for op in other.pending()]  # what ChatBot.save writes now
    assert [p["text"] for p in saved] == ["left over", "replayed answer"]
    other.start()
    await fake.wait_for("sendMessage", lambda p: p["text"] == "replayed answer", timeout=10)
    await eventually(other.idle)
    assert _texts(fake, "sendMessage") == ["left over", "replayed answer"]
    await other.close(1)


async def test_typing_does_not_pile_up_while_telegram_is_away(box):
    fake, outbox = box
    fake.set_outage(True)
    outbox.put(Post(OWNER["id"], "first"))
    await fake.wait_for("sendMessage", ok=False)
    for _ in range(20):
        outbox.put(Action(OWNER["id"]))
    assert len(outbox._lanes[OWNER["id"]].queue) == 2
    fake.set_outage(False)
    await eventually(outbox.idle, timeout=20)
    assert len(fake.calls_of("sendChatAction")) <= 1


async def test_replies_to_strangers_go_last_are_capped_and_not_kept(box):
    fake, outbox = box
    for i in range(LOW_KEPT + 3):
        outbox.put(Post(OWNER["id"], f"stranger {i}", low=True))
    outbox.put(Post(OWNER["id"], "member 1"))
    outbox.put(Post(OWNER["id"], "member 2"))
    # Nothing is sent yet (no await): a restart would keep only the team's posts.
    assert [op.text for op in outbox.pending()] == ["member 1", "member 2"]
    await eventually(outbox.idle, what="all sent")
    assert _texts(fake, "sendMessage") == ["member 1", "member 2", *(
        f"stranger {i}" for i in range(LOW_KEPT))]
    assert outbox.counters["dropped"] == 3


async def test_strangers_never_use_the_half_of_a_groups_minute_the_team_may_need(box):
    fake, outbox = box
    group = fake.add_group_chat(4711, "team")
    now = [1000.0]
    other = Outbox(outbox.bot, ChatState(), clock=lambda: now[0])
    other.start()
    for i in range(LOW_SENDS_PER_MINUTE):
        other.put(Post(group, f"member {i}"))
    other.put(Post(group, "stranger", low=True))
    await eventually(lambda: len(_texts(fake, "sendMessage", group)) == LOW_SENDS_PER_MINUTE)
    await asyncio.sleep(0.3)
    assert "stranger" not in _texts(fake, "sendMessage", group)
    now[0] += 61.0  # a minute later the budget is free again
    other.put(Action(group))  # anything wakes the lane
    await fake.wait_for("sendMessage", lambda p: p["text"] == "stranger")
    await other.close(1)


async def test_a_private_chat_is_paced_after_a_burst(box):
    fake, outbox = box
    now = [1000.0]
    other = Outbox(outbox.bot, ChatState(), clock=lambda: now[0])
    other.start()
    burst = PRIVATE_BURST - SEND_RESERVE  # progress leaves the reserve
    for i in range(burst + 3):
        other.put(Post(OWNER["id"], f"flood {i}"))
    await eventually(lambda: len(_texts(fake, "sendMessage")) == burst)
    await asyncio.sleep(0.3)
    assert len(_texts(fake, "sendMessage")) == burst  # 51 a second was possible before
    now[0] += 1.0  # then one a second
    other.put(Action(OWNER["id"]))  # anything wakes the lane
    await eventually(lambda: len(_texts(fake, "sendMessage")) == burst + 1)
    await asyncio.sleep(0.3)
    assert len(_texts(fake, "sendMessage")) == burst + 1
    now[0] += 2.0
    other.put(Action(OWNER["id"]))
    await eventually(lambda: len(_texts(fake, "sendMessage")) == burst + 3)
    assert _texts(fake, "sendMessage") == [f"flood {i}" for i in range(burst + 3)]
    await other.close(1)


async def test_an_answer_takes_the_reserve_progress_leaves(box):
    """Progress (cards) uses the burst down to ``SEND_RESERVE``; the answer (``urgent``)
    then goes at once, the clock standing still; it never overtakes a silent one still
    waiting (order is kept): that one is owed too, and goes on the reserve before it."""
    fake, outbox = box
    now = [1000.0]
    other = Outbox(outbox.bot, ChatState(), clock=lambda: now[0])
    other.start()
    burst = PRIVATE_BURST - SEND_RESERVE
    for i in range(burst):
        other.put(Post(OWNER["id"], f"card {i}"))
    await eventually(lambda: len(_texts(fake, "sendMessage")) == burst)
    other.put(Post(OWNER["id"], "the answer"), urgent=True)
    await eventually(lambda: "the answer" in _texts(fake, "sendMessage"))
    # the bucket is empty now: a silent message and an answer behind it both wait
    other.put(Post(OWNER["id"], "a card"))
    other.put(Post(OWNER["id"], "another answer"), urgent=True)
    await asyncio.sleep(0.3)
    assert len(_texts(fake, "sendMessage")) == burst + 1
    now[0] += 1.0  # one token: the silent one ahead of the answer takes it (two if alone)
    other.put(Action(OWNER["id"]))
    await eventually(lambda: len(_texts(fake, "sendMessage")) == burst + 2)
    await asyncio.sleep(0.3)
    assert len(_texts(fake, "sendMessage")) == burst + 2
    now[0] += 1.0
    other.put(Action(OWNER["id"]))
    await eventually(lambda: len(_texts(fake, "sendMessage")) == burst + 3)
    assert _texts(fake, "sendMessage")[burst:] == ["the answer", "a card", "another answer"]
    await other.close(1)


async def test_a_send_whose_answer_was_lost_goes_again_marked_never_blindly(box):
    fake, outbox = box
    fake.drop_after_accepting("sendMessage")
    outbox.put(Post(OWNER["id"], "the answer", entities=(
        {"type": "bold", "offset": 4, "length": 6},), buzz=True))
    await eventually(lambda: len(_texts(fake, "sendMessage")) == 2, timeout=10)
    first, second = fake.calls_of("sendMessage", ok=True)[-2:]
    assert first["text"] == "the answer"
    assert second["text"] == REPEAT_MARK + "the answer"
    assert "'offset': 6" in str(second["entities"]) or '"offset":6' in str(second["entities"])


async def test_a_clean_failure_is_sent_again_unmarked(box):
    fake, outbox = box
    fake.fail("sendMessage", 502)
    outbox.put(Post(OWNER["id"], "after a 502"))
    await eventually(lambda: _texts(fake, "sendMessage") == ["after a 502"], timeout=10)


async def test_a_refused_message_is_retried_plain_then_the_person_is_told(box):
    fake, outbox = box
    fake.fail("sendMessage", 400, "Bad Request: something odd", times=3)
    outbox.put(Post(OWNER["id"], "an answer", buzz=True,
                  entities=({"type": "bold", "offset": 0, "length": 2},),
                  markup={"inline_keyboard": [[{"text": "x", "callback_data": "y"}]]}))
    told = await fake.wait_for("sendMessage",
                               lambda p: str(p["text"]).startswith("⚠️ Telegram refused"))
    assert "something odd" in told["text"] and "aipager status" in told["text"]
    tried = [p for p in fake.calls_of("sendMessage", ok=False) if p["text"] == "an answer"]
    assert len(tried) == 3 and "entities" not in tried[1] and "reply_markup" not in tried[2]


async def test_a_refused_notice_of_a_refusal_is_not_told_again_whatever_its_language():
    """The notice is in the chat's language; what stops a notice about the notice is a flag
    on the post, so it holds in any language."""
    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    async with fake.running() as base:
        bot = botapi.build_bot(TOKEN, base)
        outbox = Outbox(bot, ChatState(), locale_for=lambda chat_id: "es")
        outbox.start()
        try:
            fake.fail("sendMessage", 400, "Bad Request: something odd", times=20)
            outbox.put(Post(OWNER["id"], "an answer"))
            await eventually(outbox.idle, timeout=10)
            tried = [p["text"] for p in fake.calls_of("sendMessage", ok=False)]
            assert tried[0] == "an answer"
            assert tried[-1].startswith("⚠️ Telegram se negó a mostrar un mensaje (")
            assert tried[-1].endswith("something odd); está en la computadora: `aipager status`, "
                                      "o en la terminal de la sesión.")
            assert outbox.counters["dropped"] == 2  # the answer, then its notice: no third
        finally:
            await outbox.close(0.5)
            with contextlib.suppress(Exception):
                await bot.session.close()


def _old_record(kind, **fields):
    """An op as versions before the tagged union saved it: one record with every field."""
    doc = {"kind": kind, "chat_id": OWNER["id"], "text": "", "entities": [], "markup": None,
           "reply_to": None, "key": "", "session": "", "pin": False, "emoji": "",
           "msg_id": None, "filename": "", "data": "", "photo": False, "path": "",
           "low": False, "buzz": False, "sending": False}
    return {**doc, **fields}


def test_every_op_survives_the_saved_state_and_older_records_still_load():
    ops = [Post(OWNER["id"], "hi", entities=({"type": "bold", "offset": 0, "length": 2},),
                markup={"inline_keyboard": [[{"text": "x", "callback_data": "y"}]]},
                reply_to=3, key="k", session="claude-jim", buzz=True, sending=True),
           Live(OWNER["id"], "card", key="card:claude-jim:1", reply_to=4, pin=True),
           Upload(OWNER["id"], "a.md", caption="The whole answer", data=b"# full\n"),
           React(OWNER["id"], 7, "👍"), Action(OWNER["id"])]
    assert [from_json(op.to_json()) for op in ops] == ops
    old = [_old_record("post", text="**hi**", entities=[{"type": "bold", "offset": 0,
                                                          "length": 2}], sending=True),
           _old_record("live", text="card", key="c", pin=True),
           _old_record("upload", text="caption", filename="a.md", data="IyBmdWxsCg=="),
           _old_record("react", emoji="👀", msg_id=5)]
    assert [from_json(doc) for doc in old] == [
        Post(OWNER["id"], "**hi**", entities=({"type": "bold", "offset": 0, "length": 2},),
             sending=True),
        Live(OWNER["id"], "card", key="c", pin=True),
        Upload(OWNER["id"], "a.md", caption="caption", data=b"# full\n"),
        React(OWNER["id"], 5, "👀")]
    assert from_json({"kind": "delete", "chat_id": 1}) is None
    assert from_json({"kind": "post"}) is None  # no chat: not an op


async def test_unsent_work_saved_by_an_older_version_is_sent(box):
    fake, outbox = box
    state = ChatState.from_json({"pending": [
        _old_record("post", text="from before the upgrade"),
        _old_record("upload", text="its file", filename="b.md", data="IyBvbGQK")]})
    other = Outbox(outbox.bot, state)
    other.start()
    await fake.wait_for("sendMessage", lambda p: p["text"] == "from before the upgrade")
    await fake.wait_for("sendDocument", timeout=10)
    upload = fake.uploads[-1]
    assert (upload["data"], upload["filename"], upload["caption"]) == (b"# old\n", "b.md",
                                                                       "its file")
    await other.close(1)


async def test_a_cards_last_edit_overtakes_the_pace_and_supersedes_its_progress(box):
    """Progress edits stream in faster than the pace; the task ends: its last edit goes at
    once (the clock stands still: a paced edit could not go), instead of the progress edit
    still waiting, and the pace then holds again."""
    fake, outbox = box
    now = [1000.0]
    other = Outbox(outbox.bot, ChatState(), clock=lambda: now[0])
    other.start()
    key = "card:jim:1"
    other.put(Live(OWNER["id"], "⏳ jim · working · 0s", key=key))
    other.put(Live(OWNER["id"], "⏳ bob · working · 0s", key="card:bob:1"))
    await fake.wait_for("sendMessage", lambda p: "bob" in p["text"])
    for i in range(1, 30):
        other.put(Live(OWNER["id"], f"⏳ jim · working · {i}s", key=key))
        other.put(Live(OWNER["id"], f"⏳ bob · working · {i}s", key="card:bob:1"))
        await asyncio.sleep(0.005)
    await fake.wait_for("editMessageText")
    await asyncio.sleep(0.3)
    paced = _texts(fake, "editMessageText")
    assert len(paced) == 1, paced  # one edit, then the pace: the others wait for the clock
    other.put(Live(OWNER["id"], "✅ jim · done · 30s", key=key, final=True))
    await fake.wait_for("editMessageText", lambda p: p["text"] == "✅ jim · done · 30s")
    await asyncio.sleep(0.3)
    edits = _texts(fake, "editMessageText")
    # the last edit went without the clock moving; jim's waiting progress never goes
    assert edits == [*paced, "✅ jim · done · 30s"]
    assert other.idle() is False  # bob's progress edit still waits for the pace
    now[0] += 1.0  # one gap refills one edit: a progress edit needs the bucket full
    other.put(Action(OWNER["id"]))
    await asyncio.sleep(0.3)
    assert len(_texts(fake, "editMessageText")) == 2
    now[0] += 1.0
    other.put(Action(OWNER["id"]))
    await fake.wait_for("editMessageText", lambda p: p["text"] == "⏳ bob · working · 29s")
    assert _texts(fake, "editMessageText")[2:] == ["⏳ bob · working · 29s"]
    await other.close(1)


async def test_only_one_last_edit_skips_the_pace(box):
    """Two tasks end together: the first last edit takes the reserve, the second waits one
    gap: the chat never bursts past ``EDIT_BURST``."""
    fake, outbox = box
    now = [1000.0]
    other = Outbox(outbox.bot, ChatState(), clock=lambda: now[0])
    other.start()
    for name in ("jim", "bob"):
        other.put(Live(OWNER["id"], f"⏳ {name} · working", key=f"card:{name}:1"))
    await fake.wait_for("sendMessage", lambda p: "bob" in p["text"])
    for name in ("jim", "bob"):
        other.put(Live(OWNER["id"], f"✅ {name} · done", key=f"card:{name}:1", final=True))
    await fake.wait_for("editMessageText", lambda p: "bob" in p["text"])
    await asyncio.sleep(0.3)
    # a full bucket: both at once (EDIT_BURST); a third would wait
    assert _texts(fake, "editMessageText") == ["✅ jim · done", "✅ bob · done"]
    other.put(Live(OWNER["id"], "✅ jim · done · $0.10", key="card:jim:1", final=True))
    await asyncio.sleep(0.3)
    assert len(_texts(fake, "editMessageText")) == 2
    now[0] += 1.0
    other.put(Action(OWNER["id"]))
    await fake.wait_for("editMessageText", lambda p: p["text"] == "✅ jim · done · $0.10")
    await other.close(1)


async def test_a_429_on_a_last_edit_waits_it_out_and_shows_it_once(box):
    fake, outbox = box
    outbox.put(Live(OWNER["id"], "⏳ jim · working", key="card:jim:1"))
    await fake.wait_for("sendMessage")
    outbox.put(Live(OWNER["id"], "⏳ jim · working · 1s", key="card:jim:1"))
    await fake.wait_for("editMessageText")
    fake.fail("editMessageText", 429, retry_after=1)
    outbox.put(Live(OWNER["id"], "✅ jim · done", key="card:jim:1", final=True))
    await fake.wait_for("editMessageText", ok=False)
    await fake.wait_for("editMessageText", lambda p: p["text"] == "✅ jim · done", timeout=5)
    await eventually(outbox.idle)
    assert _texts(fake, "editMessageText") == ["⏳ jim · working · 1s", "✅ jim · done"]
    assert outbox.counters["rate_limited"] == 1


class _Timed:
    """The bot, with the outbox's clock reading at each write (what Telegram would count)."""

    WRITES = ("send_message", "edit_message_text", "set_message_reaction", "send_chat_action",
              "pin_chat_message", "send_document", "send_photo")

    def __init__(self, bot, clock):
        self._bot, self._clock, self.writes = bot, clock, []

    def __getattr__(self, name):
        attr = getattr(self._bot, name)
        if name not in self.WRITES:
            return attr

        async def timed(*args, **kwargs):
            self.writes.append((self._clock(), name, kwargs.get("text") or
                                (args[1] if len(args) > 1 else "")))
            return await attr(*args, **kwargs)

        return timed

    async def __call__(self, method):
        """A method object (the outbox's ``rawmethods``), named as the ``Bot`` method."""
        name = {"sendMessage": "send_message", "editMessageText": "edit_message_text"}.get(
            method.__api_method__, method.__api_method__)
        self.writes.append((self._clock(), name, getattr(method, "text", "") or ""))
        return await self._bot(method)


async def test_a_hundred_sessions_keep_the_chat_within_its_limits_and_answers_first(box):
    """A session starts every 2.4 s for four minutes (the issue's run): each has a card
    edited twice a second, a reaction, "typing…"; an answer every 15 s.  Every write the
    chat receives fits Telegram's pace (a burst of ``PRIVATE_BURST``, then one a second:
    at most 60 + burst in any minute), and each answer goes out the moment it is put."""
    fake, outbox = box
    now = [1000.0]
    timed = _Timed(outbox.bot, lambda: now[0])
    other = Outbox(timed, ChatState(), clock=lambda: now[0])
    other.start()
    chat = OWNER["id"]
    answers: dict[str, float] = {}
    for step in range(480):  # 240 s in half seconds
        t = step * 0.5
        for n in range(min(100, int(t / 2.4) + 1)):
            other.put(Live(chat, f"⏳ s{n} · working · {step}", key=f"card:s{n}:1",
                           session=f"s{n}"))
        if step % 5 == 0:
            other.put(React(chat, 1, "👀"))
            other.put(Action(chat))
        if step % 30 == 29:
            answers[f"answer {step}"] = now[0]
            other.put(Post(chat, f"answer {step}", session="s0"), urgent=True)
            # the clock stands still until it went: a paced answer never would
            await eventually(lambda text=f"answer {step}": text in _texts(fake, "sendMessage"),
                             timeout=5,
                             what="the answer without waiting for the pace")
        await asyncio.sleep(0.01)  # the lane sends what the clock allows
        now[0] += 0.5
    await asyncio.sleep(0.1)
    times = [t for t, _m, _text in timed.writes]
    assert len(times) > 200  # the chat was busy, not starved
    for i, start in enumerate(times):
        in_second = sum(1 for t in times[i:] if t < start + 1.0)
        in_minute = sum(1 for t in times[i:] if t < start + 60.0)
        assert in_second <= PRIVATE_BURST and in_minute <= 60 + PRIVATE_BURST, (start, in_second,
                                                                               in_minute)
    sent = {text: t for t, m, text in timed.writes if m == "send_message"}
    assert {text: sent.get(text) for text in answers} == answers  # each at once
    assert len(answers) == 16
    assert other.counters["coalesced"] > 10_000  # superseded card texts never went
    await other.close(0.5)


async def test_sending_and_editing_build_no_message_model_and_make_each_answer_model_once(box):
    """A sent message's id is all the outbox reads: its answers stay dicts
    (``bot.rawmethods``), so aiogram's ``Response[Message]`` (megabytes, built again each
    time pydantic's weak cache let it go) is never built by a post or an edit; each
    answer model is made once however many writes there are."""
    import gc

    from aiogram.methods.base import Response
    from aiogram.types import Message

    from aipager import lazyaiogram

    fake, outbox = box
    before = len(lazyaiogram.answers_built())  # (other tests of this process made theirs)
    for i in range(3):
        outbox.put(Live(OWNER["id"], f"card {i}", key="card"))
        await eventually(lambda i=i: f"card {i}" in (_texts(fake, "sendMessage")
                                                     + _texts(fake, "editMessageText")))
        gc.collect()
    assert _texts(fake, "sendMessage") == ["card 0"]
    assert _texts(fake, "editMessageText") == ["card 1", "card 2"]
    everything = lazyaiogram.answers_built()
    assert len(everything) == len(set(map(repr, everything)))  # each made once
    built = everything[before:]
    assert Message not in built and not any(Message in getattr(t, "__args__", ()) for t in built)
    assert Response[everything[0]] is Response[everything[0]]
