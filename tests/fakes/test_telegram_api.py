"""The fake Bot API, driven by the real aiogram client over HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import threading

import pytest
from aiogram import Bot, Dispatcher, F, Router
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import (TelegramBadRequest, TelegramConflictError,
                                TelegramRetryAfter, TelegramServerError)
from aiogram.filters import Command, CommandStart
from aiogram.types import (BotCommand, BotCommandScopeChat, BufferedInputFile, CallbackQuery,
                           ChatMemberAdministrator, ChatMemberMember, InlineKeyboardButton,
                           InlineKeyboardMarkup, Message, MessageEntity, ReactionTypeEmoji,
                           ReplyParameters)

from fakes.telegram_api import BOT_USER, NOT_MODIFIED, OWNER, TOKEN, FakeBotAPI

CHAT = OWNER["id"]
OTHER = {"id": 777, "is_bot": False, "first_name": "Other"}


def keyboard(*data: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(inline_keyboard=[
        [InlineKeyboardButton(text=d.upper(), callback_data=d) for d in data]])


def make_bot(base: str) -> Bot:
    return Bot(TOKEN, session=AiohttpSession(api=TelegramAPIServer.from_base(base)))


@pytest.fixture
async def fake():
    api = FakeBotAPI()
    async with api.running():
        yield api


@pytest.fixture
async def bot(fake):
    client = make_bot(fake.base)
    yield client
    await client.session.close()


async def test_get_me_and_updates_parse(fake, bot):
    me = await bot.get_me()
    assert (me.id, me.username, me.can_join_groups) == (BOT_USER["id"], BOT_USER["username"], True)
    first = await fake.user_says("hello")
    cmd = await fake.user_says("/start@aipager_test_bot now", reply_to=first["message_id"])
    assert cmd["entities"] == [{"type": "bot_command", "offset": 0, "length": 23}]
    updates = await bot.get_updates(timeout=0)
    assert [u.message.text for u in updates] == ["hello", "/start@aipager_test_bot now"]
    assert updates[1].message.reply_to_message.text == "hello"
    assert updates[1].message.from_user.id == CHAT
    # confirmed by offset, then limited
    await fake.user_says("a")
    await fake.user_says("b")
    rest = await bot.get_updates(offset=updates[-1].update_id + 1, limit=1, timeout=0)
    assert [u.message.text for u in rest] == ["a"]
    assert [u["message"]["text"] for u in fake.updates] == ["a", "b"]


async def test_long_poll_waits_for_an_update(fake, bot):
    async def later():
        await asyncio.sleep(0.2)
        await fake.user_says("late")

    task = asyncio.create_task(later())
    loop = asyncio.get_running_loop()
    start = loop.time()
    updates = await bot.get_updates(timeout=5)
    await task
    assert [u.message.text for u in updates] == ["late"]
    assert 0.15 < loop.time() - start < 3
    assert await bot.get_updates(offset=updates[0].update_id + 1, timeout=0) == []


async def test_send_edit_not_modified_delete(fake, bot):
    fake.add_private_chat()
    bold = [MessageEntity(type="bold", offset=0, length=5)]
    sent = await bot.send_message(CHAT, "hello world", entities=bold,
                                  reply_markup=keyboard("yes", "no"))
    assert sent.from_user.id == BOT_USER["id"] and sent.entities[0].type == "bold"
    stored = fake.message(CHAT, sent.message_id)
    assert stored["reply_markup"]["inline_keyboard"][0][1]["callback_data"] == "no"
    with pytest.raises(TelegramBadRequest) as err:
        await bot.edit_message_text("hello world", chat_id=CHAT, message_id=sent.message_id,
                                    entities=bold, reply_markup=keyboard("yes", "no"))
    assert err.value.message == NOT_MODIFIED
    # the same text without entities is a change; without markup the keyboard goes
    edited = await bot.edit_message_text("hello world", chat_id=CHAT,
                                         message_id=sent.message_id)
    assert edited.edit_date is not None and edited.reply_markup is None
    assert "entities" not in fake.message(CHAT, sent.message_id)
    with pytest.raises(TelegramBadRequest, match="message is not modified"):
        await bot.edit_message_reply_markup(chat_id=CHAT, message_id=sent.message_id)
    await bot.edit_message_reply_markup(chat_id=CHAT, message_id=sent.message_id,
                                        reply_markup=keyboard("ok"))
    with pytest.raises(TelegramBadRequest, match="message to edit not found"):
        await bot.edit_message_text("x", chat_id=CHAT, message_id=99)
    user_msg = await fake.user_says("mine")
    with pytest.raises(TelegramBadRequest, match="can't be edited"):
        await bot.edit_message_text("x", chat_id=CHAT, message_id=user_msg["message_id"])
    second = await bot.send_message(CHAT, "second")
    assert [m["text"] for m in fake.bot_messages(CHAT)] == ["hello world", "second"]
    assert await bot.delete_message(CHAT, sent.message_id) is True
    with pytest.raises(TelegramBadRequest, match="message to delete not found"):
        await bot.delete_message(CHAT, sent.message_id)
    assert [m["message_id"] for m in fake.bot_messages(CHAT)] == [second.message_id]
    assert [m["text"] for m in fake.sent] == ["hello world", "second"]  # as first sent


async def test_sending_errors(fake, bot):
    fake.add_private_chat()
    with pytest.raises(TelegramBadRequest, match="message text is empty"):
        await bot.send_message(CHAT, " ")
    with pytest.raises(TelegramBadRequest, match="message is too long"):
        await bot.send_message(CHAT, "x" * 4097)
    with pytest.raises(TelegramBadRequest, match="chat not found"):
        await bot.send_message(5, "x")


async def test_replies_and_threads(fake, bot):
    asked = await fake.user_says("question")
    a = await bot.send_message(CHAT, "answer",
                               reply_parameters=ReplyParameters(message_id=asked["message_id"]))
    assert a.reply_to_message.text == "question"
    b = await bot.send_message(CHAT, "legacy", reply_to_message_id=a.message_id)
    assert b.reply_to_message.message_id == a.message_id
    assert "reply_to_message" not in fake.message(CHAT, b.message_id)["reply_to_message"]
    with pytest.raises(TelegramBadRequest, match="message to be replied not found"):
        await bot.send_message(CHAT, "x", reply_parameters=ReplyParameters(message_id=99))
    c = await bot.send_message(CHAT, "anyway", reply_parameters=ReplyParameters(
        message_id=99, allow_sending_without_reply=True))
    assert c.reply_to_message is None


async def test_reactions(fake, bot):
    said = await fake.user_says("do it")
    mid = said["message_id"]
    assert await bot.set_message_reaction(CHAT, mid, [ReactionTypeEmoji(emoji="👀")])
    await bot.set_message_reaction(CHAT, mid, [ReactionTypeEmoji(emoji="👍")])
    await bot.set_message_reaction(CHAT, mid, [])
    assert fake.reactions[(CHAT, mid)] == []
    assert fake.reaction_history == [(CHAT, mid, ["👀"]), (CHAT, mid, ["👍"]), (CHAT, mid, [])]
    with pytest.raises(TelegramBadRequest, match="message to react not found"):
        await bot.set_message_reaction(CHAT, 99, [ReactionTypeEmoji(emoji="👍")])


async def test_pin_and_unpin(fake, bot):
    fake.add_private_chat()
    sent = await bot.send_message(CHAT, "status")
    assert await bot.pin_chat_message(CHAT, sent.message_id, disable_notification=True)
    assert fake.pinned == {CHAT: sent.message_id}
    assert fake.calls_of("pinChatMessage")[0]["disable_notification"] == "true"
    with pytest.raises(TelegramBadRequest, match="message to pin not found"):
        await bot.pin_chat_message(CHAT, 99)
    await bot.unpin_chat_message(CHAT, message_id=sent.message_id)
    assert fake.pinned == {}


async def test_commands_per_scope(fake, bot):
    default = [BotCommand(command="status", description="Sessions")]
    mine = [BotCommand(command="new", description="New session")]
    await bot.set_my_commands(default)
    await bot.set_my_commands(mine, scope=BotCommandScopeChat(chat_id=CHAT))
    assert [c.command for c in await bot.get_my_commands()] == ["status"]
    got = await bot.get_my_commands(scope=BotCommandScopeChat(chat_id=CHAT))
    assert [c.command for c in got] == ["new"]
    assert fake.commands_for({"type": "chat", "chat_id": CHAT})[0]["description"] == "New session"
    await bot.delete_my_commands()
    assert await bot.get_my_commands() == []


async def test_callback_round_trip_through_polling(fake, bot, caplog):
    router = Router()

    @router.message(CommandStart())
    async def start(message: Message) -> None:
        await message.answer("Continue?", reply_markup=keyboard("yes", "no"))

    @router.message(Command("ping"))
    async def ping(message: Message) -> None:
        await message.bot.send_chat_action(message.chat.id, "typing")

    @router.callback_query(F.data == "yes")
    async def yes(query: CallbackQuery) -> None:
        await query.answer("Done", show_alert=True)
        await query.message.edit_text("Continuing")

    dp = Dispatcher()
    dp.include_router(router)
    task = asyncio.create_task(dp.start_polling(bot, polling_timeout=10, handle_signals=False))
    try:
        await fake.user_says("/start@aipager_test_bot")
        sent = await fake.wait_for("sendMessage", lambda p: p["text"] == "Continue?")
        assert sent["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "yes"
        card = fake.bot_messages(CHAT)[-1]
        qid = await fake.user_taps(card["message_id"], "yes")
        await fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == qid)
        assert fake.answers[qid]["text"] == "Done" and fake.answers[qid]["show_alert"] is True
        await fake.wait_for("editMessageText")
        assert fake.message(CHAT, card["message_id"])["text"] == "Continuing"
        assert "reply_markup" not in fake.message(CHAT, card["message_id"])
        await fake.user_says("/ping")
        assert (await fake.wait_for("sendChatAction"))["action"] == "typing"
    finally:
        await dp.stop_polling()
        await task
    with pytest.raises(TelegramBadRequest, match="query is too old"):
        await bot.answer_callback_query(qid)
    assert [m for m, *_ in fake.failed_calls] == ["answerCallbackQuery"]
    assert "Failed to fetch updates" not in caplog.text  # every batch parsed


async def test_document_and_photo_uploads(fake, bot):
    fake.add_private_chat()
    data = b"line\n" * 1000
    msg = await bot.send_document(CHAT, BufferedInputFile(data, "log.txt"), caption="the log")
    assert (msg.document.file_name, msg.document.file_size, msg.caption) == (
        "log.txt", len(data), "the log")
    up = fake.uploads[0]
    assert (up["method"], up["chat_id"], up["filename"], up["caption"]) == (
        "sendDocument", CHAT, "log.txt", "the log")
    assert up["data"] == data and up["sha256"] == hashlib.sha256(data).hexdigest()
    photo = await bot.send_photo(CHAT, BufferedInputFile(b"\x89PNG fake", "shot.png"))
    assert photo.photo[-1].file_size == 9 and fake.uploads[1]["method"] == "sendPhoto"
    again = await bot.send_document(CHAT, msg.document.file_id)  # resend by file_id
    assert again.document.file_unique_id == msg.document.file_unique_id
    assert len(fake.uploads) == 2
    with pytest.raises(TelegramBadRequest, match="wrong file identifier"):
        await bot.send_document(CHAT, "nope")
    assert (await bot.download(msg.document.file_id)).read() == data


async def test_get_file_and_download_user_files(fake, bot):
    await fake.user_sends_document(b"# notes\n", "notes.md", caption="read this")
    await fake.user_sends_photo(b"\xff\xd8jpeg", caption="look", media_group_id="g1")
    doc, pic = [u.message for u in await bot.get_updates(timeout=0)]
    assert (doc.document.file_name, doc.caption) == ("notes.md", "read this")
    info = await bot.get_file(doc.document.file_id)
    assert info.file_size == 8 and info.file_path.endswith(".md")
    assert (await bot.download(doc.document)).read() == b"# notes\n"
    assert pic.media_group_id == "g1"
    assert (await bot.download(pic.photo[-1].file_id)).read() == b"\xff\xd8jpeg"
    with pytest.raises(TelegramBadRequest, match="invalid file_id"):
        await bot.get_file("missing")


async def test_flood_control_surfaces_retry_after(fake, bot):
    fake.add_private_chat()
    fake.fail("sendMessage", 429, retry_after=3, times=2)
    for _ in range(2):
        with pytest.raises(TelegramRetryAfter) as err:
            await bot.send_message(CHAT, "hi")
        assert err.value.retry_after == 3 and "retry after 3" in err.value.message
    await bot.send_message(CHAT, "hi")
    assert len(fake.calls_of("sendMessage")) == 3
    assert len(fake.calls_of("sendMessage", ok=False)) == 2
    assert [(m, code) for m, _, code, _ in fake.failed_calls] == [("sendMessage", 429)] * 2
    assert (await fake.wait_for("sendMessage", ok=False))["text"] == "hi"
    assert len(fake.bot_messages(CHAT)) == 1
    fake.fail("editMessageText", 400, "Bad Request: can't parse entities")
    with pytest.raises(TelegramBadRequest, match="can't parse entities"):
        await bot.edit_message_text("x", chat_id=CHAT, message_id=1)


async def test_outage_and_conflict(fake, bot):
    fake.add_private_chat()
    fake.set_outage(True)
    with pytest.raises(TelegramServerError, match="Bad Gateway"):
        await bot.send_message(CHAT, "hi")
    with pytest.raises(TelegramServerError):
        await bot.get_updates(timeout=0)
    fake.set_outage(False)
    await bot.send_message(CHAT, "hi")
    fake.conflict = True
    with pytest.raises(TelegramConflictError, match="only one bot instance"):
        await bot.get_updates(timeout=0)
    await bot.send_message(CHAT, "still sends")


async def test_group_chats_parse(fake, bot):
    group = fake.add_group_chat(1001, "Team", forum=True)
    assert group == -1001
    said = await fake.user_says("in topic", user=OTHER, chat_id=group, thread_id=7)
    await fake.user_says("/status", chat_id=group)
    updates = await bot.get_updates(timeout=0)
    first, second = [u.message for u in updates]
    assert (first.chat.type, first.chat.title, first.chat.is_forum) == ("supergroup", "Team", True)
    assert (first.message_thread_id, first.is_topic_message) == (7, True)
    assert first.from_user.id == OTHER["id"] and second.from_user.id == CHAT
    sent = await bot.send_message(group, "reply", message_thread_id=7,
                                  reply_parameters=ReplyParameters(message_id=said["message_id"]))
    assert sent.message_thread_id == 7 and sent.reply_to_message.from_user.id == OTHER["id"]
    assert (await bot.get_chat(group)).title == "Team"
    member = await bot.get_chat_member(group, BOT_USER["id"])
    assert isinstance(member, ChatMemberAdministrator) and member.can_pin_messages
    fake.bot_is_admin = False
    assert isinstance(await bot.get_chat_member(group, BOT_USER["id"]), ChatMemberMember)
    assert isinstance(await bot.get_chat_member(group, OTHER["id"]), ChatMemberMember)
    with pytest.raises(TelegramBadRequest, match="not enough rights"):
        await bot.pin_chat_message(group, sent.message_id)
    qid = await fake.user_taps(sent.message_id, "x", user=OTHER, chat_id=group)
    tap = (await bot.get_updates(offset=updates[-1].update_id + 1, timeout=0))[0]
    assert tap.callback_query.id == qid and tap.callback_query.message.chat.id == group


async def test_raw_updates_and_wait_for(fake, bot):
    raw = await fake.push_raw_update({"message": {"message_id": 1, "date": 0,
                                                  "chat": {"id": 9, "type": "private"}}})
    assert raw["update_id"] == 1
    assert (await bot.get_updates(timeout=0))[0].message.chat.id == 9
    with pytest.raises(AssertionError, match=r"(?s)no matching sendMessage call.*getUpdates"):
        await fake.wait_for("sendMessage", lambda p: True, timeout=0.2)
    fake.add_private_chat()

    async def later():
        await asyncio.sleep(0.1)
        await bot.send_message(CHAT, "one")
        await bot.send_message(CHAT, "two")

    task = asyncio.create_task(later())
    got = await fake.wait_for("sendmessage", lambda p: p["text"] == "two", timeout=5)
    await task
    assert got["text"] == "two" and fake.methods()[-2:] == ["sendMessage", "sendMessage"]


def test_blocking_twins_from_another_thread():
    fake = FakeBotAPI()

    async def bot_side(steps):
        bot = make_bot(fake.base)
        try:
            return await steps(bot)
        finally:
            await bot.session.close()

    def run_later(steps):
        thread = threading.Timer(0.2, lambda: asyncio.run(bot_side(steps)))
        thread.start()
        return thread

    async def reply_to_first(bot):
        update = (await bot.get_updates(timeout=5))[0]
        await bot.send_message(update.message.chat.id, "got " + update.message.text,
                               reply_markup=keyboard("go"))
        return update.update_id

    with fake.in_thread():
        said = fake.say("hello")
        assert said["text"] == "hello"
        thread = run_later(reply_to_first)
        params = fake.wait_call("sendMessage")
        thread.join(10)
        assert params["text"] == "got hello"
        card = fake.snapshot()["sent"][0]
        qid = fake.tap(card["message_id"], "go")
        fake.send_document(b"abc", "a.txt")
        fake.send_photo(b"img")
        kinds = fake.snapshot()["updates"]
        assert [next(k for k in u if k != "update_id") for u in kinds] == [
            "message", "callback_query", "message", "message"]
        assert kinds[1]["callback_query"]["id"] == qid
        with pytest.raises(AssertionError, match="no editMessageText"):
            fake.wait_call("editMessageText", timeout=0.2)
        fake.set_outage(True)
        asyncio.run(bot_side(during_outage))
    assert fake.failed_calls[-1][2] == 502


async def during_outage(bot):
    with pytest.raises(TelegramServerError):
        await bot.get_me()


async def test_json_and_plain_multipart_params(fake):
    import aiohttp

    fake.add_private_chat()
    markup = {"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}
    async with aiohttp.ClientSession() as http:
        url = f"{fake.base}/bot{TOKEN}/SENDMESSAGE"
        async with http.post(url, json={"chat_id": CHAT, "text": "hi",
                                        "reply_markup": markup}) as resp:
            body = await resp.json()
        assert body["ok"] and body["result"]["reply_markup"] == markup
        form = aiohttp.FormData()
        form.add_field("chat_id", str(CHAT))
        form.add_field("document", b"raw", filename="r.bin")
        async with http.post(f"{fake.base}/bot{TOKEN}/sendDocument", data=form) as resp:
            assert (await resp.json())["result"]["document"]["file_name"] == "r.bin"
        async with http.post(f"{fake.base}/bot{TOKEN}/noSuchMethod") as resp:
            assert resp.status == 404
        async with http.get(f"{fake.base}/file/bot{TOKEN}/documents/nothing") as resp:
            assert resp.status == 404
    assert fake.uploads[0]["data"] == b"raw"
