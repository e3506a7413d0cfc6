"""/app: a button that opens the web page inside Telegram, once it has an HTTPS address."""

from __future__ import annotations

from aipager import config


async def test_app_says_how_until_the_page_has_an_https_address(chat):
    await chat.fake.user_says("/app", chat_id=chat.chat_id)
    told = await chat.fake.wait_for("sendMessage", lambda p: "📟" in str(p["text"]))
    assert "HTTPS" in told["text"] and "web_public_url" in told["text"]
    assert not told.get("reply_markup")


async def test_app_opens_the_page_as_a_mini_app(chat):
    cfg = config.load(chat.daemon.env)
    config.save(chat.daemon.env, config.Config(
        bot_token=cfg.bot_token, chat_id=cfg.chat_id, members=cfg.members,
        extra={**cfg.extra, "web_public_url": "https://box.example.ts.net/"}))
    await chat.fake.user_says("/app", chat_id=chat.chat_id)
    sent = await chat.fake.wait_for("sendMessage", lambda p: bool(p.get("reply_markup")))
    (row,) = sent["reply_markup"]["inline_keyboard"]
    assert row == [{"text": "📟 Open aipager", "web_app": {"url": "https://box.example.ts.net/"}}]
