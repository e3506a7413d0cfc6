"""What the phone shows, step by step, for the everyday flow: a message becomes a prompt,
the card follows the task, the answer arrives once, threaded, with 👀 → 👍."""

from __future__ import annotations

import os

import orjson
import pytest
from bot.conftest import STRANGER, eventually
from fakes.telegram_api import OWNER

from aipager.bot import chatstate
from aipager.bot.outbox import Post
from tests.support.door import door


def _reactions(fake, msg_id):
    return [p["reaction"][0]["emoji"] for p in fake.calls_of("setMessageReaction")
            if int(p["message_id"]) == msg_id]


async def test_a_message_becomes_a_prompt_and_the_answer_comes_back_once(chat):
    fake = chat.fake
    session = chat.start("jim")
    msg = await fake.user_says("fix the failing test")
    typed = await eventually(lambda: chat.sessions.typed, what="the message typed")
    assert typed[0][:2] == (session, "fix the failing test")
    note = typed[0][2]
    assert (note["author_user_id"], note["role"], note["msg_id"]) == (OWNER["id"], "owner",
                                                                      msg["message_id"])
    await fake.wait_for("setMessageReaction", lambda p: p["reaction"][0]["emoji"] == "👀")

    # Claude takes it: the hook's pick-up, then the prompt, a tool, the answer.
    chat.feed(session, "queue_pickup", consumed=[{"msg_id": msg["message_id"],
                                                  "chat_id": chat.chat_id,
                                                  "author_user_id": OWNER["id"]}])
    chat.feed(session, "UserPromptSubmit", prompt="fix the failing test", prompt_id="p1")
    chat.feed(session, "PreToolUse", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "pytest -q"})
    card = await fake.wait_for("sendMessage", lambda p: "jim · working" in str(p.get("text")))
    assert "pytest -q" in card["text"]
    assert "⏹ Stop" in str(card.get("reply_markup"))
    chat.feed(session, "PostToolUse", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "pytest -q"}, tool_response={"stdout": "1 passed"})
    chat.feed(session, "Stop", prompt_id="p1",
              last_assistant_message="**Fixed.** The test passes now.\n\n```\n1 passed\n```")
    answer = await fake.wait_for("sendMessage", lambda p: "The test passes now" in str(p["text"]))
    assert int(answer["reply_parameters"]["message_id"]) == msg["message_id"]
    kinds = {e["type"] for e in answer.get("entities") or []}
    assert {"bold", "pre"} <= kinds, answer
    assert "**" not in answer["text"]
    await fake.wait_for("setMessageReaction", lambda p: p["reaction"][0]["emoji"] == "👍")
    final = await fake.wait_for("editMessageText", lambda p: "jim · done" in str(p["text"]))
    assert "reply_markup" not in final or not final["reply_markup"], final
    assert _reactions(fake, msg["message_id"]) == ["👀", "👍"]

    # The same Stop again (a repeated datagram, a replay): nothing new is sent.
    before = len(fake.calls_of("sendMessage"))
    chat.feed(session, "Stop", prompt_id="p1",
              last_assistant_message="**Fixed.** The test passes now.\n\n```\n1 passed\n```",
              replayed=1)
    await chat.bot.outbox_settled() if hasattr(chat.bot, "outbox_settled") else None
    await eventually(lambda: chat.bot.outbox.idle(), what="outbox idle")
    assert len(fake.calls_of("sendMessage")) == before
    answers = [t for t in chat.sent_texts() if "The test passes now" in t]
    assert len(answers) == 1


async def test_a_stranger_is_never_acted_on_and_hears_it_once(chat):
    chat.start("jim")
    await chat.fake.user_says("rm -rf /", user=STRANGER)
    await chat.fake.user_says("please", user=STRANGER)
    reply = await chat.fake.wait_for("sendMessage", lambda p: int(p["chat_id"]) == STRANGER["id"])
    assert "private" in reply["text"]
    await chat.fake.user_says("/status")  # the owner's message is handled after the stranger's
    await chat.fake.wait_for("sendMessage", lambda p: "Sessions:" in str(p["text"]))
    assert chat.sessions.typed == []
    assert len([p for p in chat.fake.calls_of("sendMessage")
                if int(p["chat_id"]) == STRANGER["id"]]) == 1


async def test_a_stranger_is_audited_and_shown_to_the_owner_quietly_once(chat):
    """A stranger writing to the bot in their own chat was only logged: the owner never
    learned that somebody found the bot.  Now the chat shows it once (silently) and the
    audit has it; the stranger's second message adds nothing."""
    from aipager.proto import paths

    chat.start("jim")
    await chat.fake.user_says("let me in", user=STRANGER)
    await chat.fake.user_says("please", user=STRANGER)
    line = await chat.fake.wait_for("sendMessage", lambda p: int(p["chat_id"]) == chat.chat_id
                                    and "not in the team" in str(p["text"]))
    assert line["text"] == ("👤 @mallory (id 777), who is not in the team, wrote to the bot "
                            "and was told it is private.")
    assert str(line.get("disable_notification")).lower() == "true"
    await chat.fake.user_says("/status")  # handled after both of the stranger's
    await chat.fake.wait_for("sendMessage", lambda p: "Sessions:" in str(p["text"]))
    told = [p for p in chat.fake.calls_of("sendMessage") if "not in the team" in str(p["text"])]
    assert len(told) == 1
    with open(paths.audit_log(chat.bot.env), "rb") as fh:
        records = [orjson.loads(line) for line in fh]
    refused = [r for r in records if r["action"] == "stranger_refused"]
    assert len(refused) == 1 and refused[0]["who_id"] == STRANGER["id"], refused


async def test_with_several_sessions_a_picker_asks_where_the_message_goes(chat):
    chat.start("alpha")
    beta = chat.start("beta")
    msg = await chat.fake.user_says("run the linter")
    picker = await chat.fake.wait_for("sendMessage", lambda p: "Which session" in str(p["text"]))
    buttons = [b for row in picker["reply_markup"]["inline_keyboard"] for b in row]
    assert [b["text"] for b in buttons] == ["alpha", "beta"]
    sent = next(m for m in chat.fake.bot_messages(chat.chat_id) if "Which session" in m["text"])
    await chat.fake.user_taps(sent["message_id"], buttons[1]["callback_data"])
    typed = await eventually(lambda: chat.sessions.typed, what="typed after the pick")
    assert typed[0][:2] == (beta, "run the linter")
    assert typed[0][2]["msg_id"] == msg["message_id"]
    # The pick made beta current: the next message goes there without asking.
    await chat.fake.user_says("and the formatter")
    await eventually(lambda: len(chat.sessions.typed) == 2, what="second message typed")
    assert chat.sessions.typed[1][:2] == (beta, "and the formatter")


async def test_a_reply_to_a_sessions_message_goes_to_that_session(chat):
    alpha = chat.start("alpha")
    chat.start("beta")
    chat.feed(alpha, "UserPromptSubmit", prompt="terminal work", prompt_id="a1")
    chat.feed(alpha, "Stop", prompt_id="a1", last_assistant_message="Alpha's answer.")
    answer = await chat.fake.wait_for("sendMessage", lambda p: "Alpha's answer" in str(p["text"]))
    stored = next(m for m in chat.fake.bot_messages(chat.chat_id) if "Alpha's answer" in m["text"])
    await chat.fake.user_says("thanks, now the docs", reply_to=stored["message_id"])
    typed = await eventually(lambda: chat.sessions.typed, what="typed")
    assert typed[0][:2] == (alpha, "thanks, now the docs")
    # Claude is told what the message replies to.
    assert typed[0][2]["reply_to"]["text"].endswith("Alpha's answer.")
    assert answer


async def test_a_message_for_a_session_that_is_gone_is_marked_undelivered(chat):
    session = chat.start("jim")
    chat.sessions.live.discard(session)  # its terminal died; discovery has not noticed yet
    msg = await chat.fake.user_says("hello?")
    await chat.fake.wait_for("setMessageReaction", lambda p: p["reaction"][0]["emoji"] == "🤷")
    note = await chat.fake.wait_for("sendMessage", lambda p: "Not delivered" in str(p["text"]))
    assert "not running" in note["text"]
    assert _reactions(chat.fake, msg["message_id"])[-1] == "🤷"
    sess = chat.daemon.core.registry.get(session)
    assert sess.queue == []


async def test_messages_wait_while_claude_shows_a_dialog_and_go_in_after(chat):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="deploy", prompt_id="p1")
    chat.feed(session, "PermissionRequest", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "make deploy", "description": "Deploy"})
    await chat.fake.wait_for("sendMessage", lambda p: "make deploy" in str(p["text"]))
    msg = await chat.fake.user_says("also bump the version")
    await chat.fake.wait_for("sendMessage", lambda p: "Held for jim" in str(p["text"]))
    assert chat.sessions.typed == []
    chat.feed(session, "PostToolUse", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "make deploy"}, tool_response={})
    # The dialog closed: typing can no longer answer it, so the message goes in now.
    typed = await eventually(lambda: chat.sessions.typed, what="released message typed")
    assert typed[0][:2] == (session, "also bump the version")
    assert typed[0][2]["author_user_id"] == OWNER["id"]
    await chat.fake.wait_for("setMessageReaction", lambda p: int(p["message_id"]) == msg["message_id"])


async def test_outbox_ops_left_unsent_survive_a_restart(chat, tmp_path):
    from aipager.bot import chatstate
    from aipager.bot.outbox import Outbox

    chat.fake.set_outage(True)
    chat.bot.outbox.put(Post(chat.chat_id, "an answer that must arrive"), urgent=True)
    saved = chatstate.load(chat.bot.env)
    assert [op.text for op in saved.pending] == ["an answer that must arrive"]
    chat.fake.set_outage(False)
    # A new process: a fresh outbox on the saved state sends it.
    outbox = Outbox(chat.bot.bot, saved)
    outbox.start()
    await chat.fake.wait_for("sendMessage", lambda p: p["text"] == "an answer that must arrive")
    await outbox.close()


async def test_long_answers_are_split_and_past_a_few_messages_attached(chat):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="explain", prompt_id="p1")
    para = ("This paragraph explains one more part of the design in plain words. " * 20).strip()
    answer = "\n\n".join(f"## Part {i}\n\n{para}" for i in range(30))
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message=answer)
    upload = await chat.fake.wait_for("sendDocument")
    assert chat.fake.uploads[-1]["filename"] == "jim-answer.md"
    assert chat.fake.uploads[-1]["data"] == answer.encode()
    head = [p for p in chat.fake.calls_of("sendMessage") if "Part 0" in str(p["text"])]
    assert len(head) == 1 and len(head[0]["text"]) <= 4096
    assert upload


async def test_context_warning_offers_compact_and_the_tap_types_it(chat):
    session = chat.start("jim")
    chat.feed(session, "statusline", context_pct=91.0)
    notice = await chat.fake.wait_for("sendMessage", lambda p: "Context at 91%" in p["text"])
    stored = next(m for m in chat.fake.bot_messages(chat.chat_id) if "Context at 91%" in m["text"])
    data = stored["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    await chat.fake.user_taps(stored["message_id"], data)
    await eventually(lambda: chat.sessions.typed)
    assert chat.sessions.typed[0][:2] == (session, "/compact")
    assert notice


async def test_the_pinned_status_line_is_edited_not_resent_and_typing_shows(chat):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="work", prompt_id="p1")
    await chat.fake.wait_for("pinChatMessage")
    await chat.fake.wait_for("sendChatAction", lambda p: p["action"] == "typing", timeout=10)
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="Done.")
    await chat.fake.wait_for("editMessageText", lambda p: p["text"].startswith("📟 ✅"))
    assert len(chat.fake.calls_of("pinChatMessage")) == 1
    status_posts = [p for p in chat.fake.calls_of("sendMessage") if p["text"].startswith("📟")]
    assert len(status_posts) == 1


async def test_after_an_unclean_stop_the_chat_hears_it_once(tmp_path):
    import asyncio
    import contextlib
    import os

    from fakes.telegram_api import TOKEN, FakeBotAPI

    from aipager import config
    from aipager.bot.service import RESTARTED, ChatBot, previous_run_unclean
    from aipager.daemon.app import Daemon

    assert previous_run_unclean({"daemon": {"started_at": 1.0, "stopped_at": None}})
    assert not previous_run_unclean({"daemon": {"started_at": 1.0, "stopped_at": 2.0}})
    assert not previous_run_unclean({"daemon": {"started_at": None, "stopped_at": None}})
    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    async with fake.running() as base:
        env = dict(os.environ, AIPAGER_TELEGRAM_API_BASE=base)
        cfg = config.Config(bot_token=TOKEN, chat_id=OWNER["id"])
        bot = ChatBot(env, cfg, unclean=True)
        daemon = Daemon(env, notifier=bot.notifier)
        bot.attach(door(daemon))
        task = asyncio.create_task(bot.run())
        try:
            await fake.wait_for("sendMessage", lambda p: p["text"] == RESTARTED)
            await fake.wait_for("setMyCommands")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_status_shows_the_chats_health(chat):
    await eventually(lambda: chat.daemon.daemon_facts()["chat"]["telegram"] == "ok")
    chat.fake.set_outage(True)
    chat.bot.outbox.put(Post(chat.chat_id, "waits"))
    await eventually(lambda: chat.daemon.daemon_facts()["chat"]["telegram"] == "unreachable",
                     timeout=40)
    facts = chat.daemon.daemon_facts()["chat"]
    assert facts["unsent"] == 1 and facts["chat_id"] == chat.chat_id
    chat.fake.set_outage(False)
    await eventually(lambda: chat.daemon.daemon_facts()["chat"]["unsent"] == 0, timeout=40)


async def test_a_second_safety_block_in_a_session_is_told_too(chat):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="clean up", prompt_id="p1")
    chat.feed(session, "safety_blocked", tool="Bash", reason="tool Bash is denied for this task")
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="I could not.")
    chat.feed(session, "UserPromptSubmit", prompt="try again", prompt_id="p2")
    # the same block in the next task, at once: byte-identical, still a block of its own
    chat.feed(session, "safety_blocked", tool="Bash", reason="tool Bash is denied for this task")

    def notices():  # the finished card names the refusal too; the notice says what happened
        return [p["text"] for p in chat.fake.calls_of("sendMessage")
                if "a safety rule refused Bash" in p["text"]]

    # (a private chat takes five posts in five seconds: the second notice may wait)
    await eventually(lambda: len(notices()) == 2, timeout=15, what="two block notices")
    with open(chat.daemon.core.ctx.audit.path, "rb") as fh:
        actions = [orjson.loads(line)["action"] for line in fh]
    assert actions == ["safety_blocked", "safety_blocked"]


@pytest.mark.parametrize("saved_chat_state", [b'{"live": {"card:x', b"[1, 2]"])
async def test_a_damaged_chat_state_is_kept_aside_and_said_once(chat, saved_chat_state, caplog):
    from aipager.proto import paths

    path = paths.chat_state_file(chat.bot.env)
    note = await chat.fake.wait_for("sendMessage", lambda p: "chat state was damaged" in p["text"])
    kept = [n for n in os.listdir(os.path.dirname(path))
            if n.startswith(os.path.basename(path) + ".damaged-")]
    assert len(kept) == 1, kept
    with open(os.path.join(os.path.dirname(path), kept[0]), "rb") as fh:
        assert fh.read() == saved_chat_state
    assert kept[0] in note["text"]
    assert any("chat state was damaged" in r.getMessage() and r.levelname == "ERROR"
               for r in caplog.get_records("setup"))
    chat.bot.save()  # a sound file now: nothing to say at the next start
    assert chatstate.load(chat.bot.env).damaged == ""
    await eventually(lambda: chat.bot.outbox.idle(), what="outbox idle")
    assert len([t for t in chat.sent_texts() if "damaged" in t]) == 1
