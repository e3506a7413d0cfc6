"""The page and the chat of one daemon, on the real path: the real ``Daemon`` fed hook
datagrams, the real chat over HTTP against the fake Bot API, the real page application
(signed in as the person at the machine, ``@web``); only the terminal is a fake.

- A session that becomes ready says so on the page's live stream (no card says it).
- A restart of the daemon adds nothing to the page's conversations.
- A prompt sent from the page shows in the chat as a prompt typed at the computer does
  (who sent it, and its words unless private mode keeps them off Telegram), and the card
  and the answer reply to it: an answer never comes without its question.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from bot.conftest import eventually
from fakes.sessionio import FakeSessions
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI

from aipager import config
from tests.support.door import door

S = "claude-jim"
HOST = "127.0.0.1:7180"
ORIGIN = f"http://{HOST}"


class Both:
    """The chat and the page of one daemon."""

    def __init__(self, fake: FakeBotAPI, daemon: Any, bot: Any, sessions: FakeSessions,
                 client: TestClient, live: Any) -> None:
        self.fake, self.daemon, self.bot, self.sessions = fake, daemon, bot, sessions
        self.client, self.live = client, live

    def feed(self, session: str, event: str, **fields: Any) -> None:
        key = "type" if event in ("statusline",) else "hook_event_name"
        self.daemon.deliver([orjson.dumps({key: event, "session": session, **fields})])
        self.daemon.core.flush_cards()

    def start(self, session: str = S) -> None:
        self.sessions.live.add(session)
        self.feed(session, "SessionStart", source="startup", session_id=f"sid-{session}",
                  cwd="/tmp", transcript_path=f"/nonexistent/{session}.jsonl")

    async def prompt(self, text: str, session: str = S) -> dict:
        """``text`` sent from the page; Claude Code takes it (the hook's pick-up, then its
        UserPromptSubmit, as for a phone message). Returns the typed message's note."""
        response = await self.client.post(f"/api/sessions/{session}/prompt", json={"text": text},
                                          headers={"Host": HOST, "Origin": ORIGIN})
        result = await response.json()
        assert result["outcome"] == "typed", result
        (typed_session, encoded), = [p for p in self.sessions.pasted if p[0] == session][-1:]
        note = self.sessions.typed[-1][2]
        self.feed(session, "queue_pickup", consumed=[{
            "msg_id": note["msg_id"], "chat_id": note["chat_id"],
            "author_user_id": note["author_user_id"]}])
        self.feed(session, "UserPromptSubmit", prompt=encoded, prompt_id=f"p-{note['msg_id']}")
        return note


@pytest.fixture
def private() -> bool:
    return False


@pytest.fixture
async def both(private):
    from aipager.bot.service import ChatBot
    from aipager.clients.members import Members
    from aipager.daemon.app import Daemon
    from aipager.port.outputs import FanoutNotifier
    from aipager.web.actions import WebActions
    from aipager.web.auth import Logins
    from aipager.web.live import WebNotifier
    from aipager.web.routes import make_app
    from aipager.web.service import Settings
    from aipager.web.who import People

    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    async with fake.running() as base:
        env = dict(os.environ, AIPAGER_TELEGRAM_API_BASE=base)
        cfg = config.Config(bot_token=TOKEN, chat_id=OWNER["id"],
                            extra={"private": True} if private else {})
        config.save(env, cfg)
        bot = ChatBot(env, cfg)
        sessions = FakeSessions()
        holder: list = []
        live = WebNotifier(lambda: holder[0].sessions if holder else None)
        daemon = Daemon(env, notifier=FanoutNotifier([bot.notifier, live]), session_io=sessions)
        holder.append(daemon)
        bot.attach(door(daemon))
        spawned: list = []
        actions = WebActions(door(daemon), live, spawned.append)
        logins = Logins()
        people = People(env, Members(env, cfg))
        people.attach(actions.port)  # as WebPage.attach does
        app = make_app(actions, live, logins, people,
                       allowed_hosts=Settings().hosts(7180),
                       allowed_origins=Settings().origins(7180))
        client = TestClient(TestServer(app))
        await client.start_server()
        signed = await client.get(f"/?token={logins.issue()}", headers={"Host": HOST},
                                  allow_redirects=False)
        assert signed.status == 303
        task = asyncio.create_task(bot.run())
        try:
            yield Both(fake, daemon, bot, sessions, client, live)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await client.close()
            for coro in spawned:
                coro.close()


# -- the page's live stream ----------------------------------------------------------------


async def test_a_session_that_becomes_ready_is_told_on_the_live_stream(both):
    """A session the page started is "starting" until Claude Code's SessionStart: no card
    says it is ready (it has no task), and the page reads again only on an event."""
    both.sessions.live.add(S)
    both.daemon.core.registry.ensure(S)  # started from the page: known, not started yet
    both.daemon.core.flush_cards()
    shown = await (await both.client.get("/api/sessions", headers={"Host": HOST})).json()
    assert [(s["name"], s["state"]) for s in shown] == [(S, "unknown")]
    stream = both.live.subscribe()
    both.feed(S, "SessionStart", source="startup", session_id="sid-jim", cwd="/tmp",
              transcript_path="/nonexistent/jim.jsonl")
    event = stream.get_nowait()
    assert event["session"] == S
    shown = await (await both.client.get("/api/sessions", headers={"Host": HOST})).json()
    assert [(s["name"], s["state"]) for s in shown] == [(S, "ready")]
    # nothing changed: nothing more is said
    both.daemon.core.flush_cards()
    assert stream.empty()


# -- a restart ------------------------------------------------------------------------------


def _restarted_page(env: dict) -> tuple[Any, Any]:
    """A daemon with its page as ``aipager start`` makes them after a restart: the
    daemon's saved sessions and the page's kept conversations put back, then its first
    tick (which shows every restored session's card again)."""
    from aipager.daemon import persist
    from aipager.daemon.app import Daemon
    from aipager.web.auth import Logins
    from aipager.web.keep import Keeper
    from aipager.web.live import WebNotifier

    holder: list = []
    live = WebNotifier(lambda: holder[0].sessions if holder else None)
    Keeper(env, Logins(), live).load()
    daemon = Daemon(env, notifier=live, session_io=FakeSessions())
    holder.append(daemon)
    persist.restore_saved(env, daemon.core.registry)
    daemon.core.tick()
    return daemon, live


def test_a_restart_adds_nothing_to_the_pages_conversation():
    """The page keeps its conversations across a restart, and a restored session's card is
    shown again: its task's prompt was said once and is not said again, however often the
    daemon restarts (a prompt typed at the computer, one from the phone)."""
    env = dict(os.environ)
    daemon, live = _restarted_page(env)  # the first start: nothing saved yet
    for name, author in (("claude-ann", None), ("claude-bo", {"msg_id": 7, "chat_id": 42,
                                                               "author_user_id": 1})):
        daemon.deliver([orjson.dumps({"hook_event_name": "SessionStart", "session": name,
                                      "session_id": f"sid-{name}", "source": "startup"})])
        if author is not None:
            daemon.deliver([orjson.dumps({"type": "queue_pickup", "session": name,
                                          "consumed": [author]})])
        for doc in ({"hook_event_name": "UserPromptSubmit", "prompt": "the last prompt",
                     "prompt_id": "p1"},
                    {"hook_event_name": "Stop", "prompt_id": "p1",
                     "last_assistant_message": "done"}):
            daemon.deliver([orjson.dumps({**doc, "session": name})])
            daemon.core.flush_cards()  # (a tick)
    daemon.save(force=True)
    live.on_change()  # (no loop: the page's file is written now)
    said = {name: [(e["kind"], e["text"]) for e in live.conversation(name)]
            for name in ("claude-ann", "claude-bo")}
    assert said == {name: [("prompt", "the last prompt"), ("answer", "done")] for name in said}

    for _restart in range(3):
        daemon, live = _restarted_page(env)
        for name in said:
            assert [(e["kind"], e["text"]) for e in live.conversation(name)] == said[name]
        daemon.save(force=True)


def test_a_short_tasks_answer_follows_its_prompt_on_the_page():
    """A phone message's task that ends before the daemon's next tick (its first card waits
    for the tick): the page says its prompt, then its answer, not the other way round."""
    env = dict(os.environ)
    daemon, live = _restarted_page(env)
    for doc in ({"hook_event_name": "SessionStart", "session_id": "sid-cy", "source": "startup"},
                {"type": "queue_pickup", "consumed": [{"msg_id": 7, "chat_id": 42,
                                                       "author_user_id": 1}]},
                {"hook_event_name": "UserPromptSubmit", "prompt": "quick one", "prompt_id": "p1"},
                {"hook_event_name": "Stop", "prompt_id": "p1", "last_assistant_message": "ok"}):
        daemon.deliver([orjson.dumps({**doc, "session": "claude-cy"})])
    daemon.core.tick()
    assert [(e["kind"], e["text"]) for e in live.conversation("claude-cy")] == [
        ("prompt", "quick one"), ("answer", "ok")]


# -- a prompt from the page, in the chat -------------------------------------------------


def _message(fake: FakeBotAPI, start: str) -> dict:
    return next(m for m in fake.bot_messages(OWNER["id"]) if m.get("text", "").startswith(start))


async def test_a_prompt_from_the_page_shows_in_the_chat_and_its_answer_replies_to_it(both):
    both.start()
    await both.prompt("run the flaky test again")
    mirrored = await both.fake.wait_for(
        "sendMessage", lambda p: str(p.get("text", "")).startswith("🌐 jim · @web on the page"))
    assert mirrored["text"].endswith("\nrun the flaky test again")
    assert mirrored.get("disable_notification") in (True, "true")  # the answer rings
    shown = _message(both.fake, "🌐 jim · @web on the page")
    both.feed(S, "PreToolUse", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "pytest -q"})
    await eventually(lambda: both.bot.state.live_id(f"typed:{S}:1"), what="its id kept")
    both.feed(S, "Stop", prompt_id=f"p-{both.sessions.typed[-1][2]['msg_id']}",
              last_assistant_message="It passes **now**.")
    answer = await both.fake.wait_for("sendMessage", lambda p: "It passes" in str(p["text"]))
    assert int(answer["reply_parameters"]["message_id"]) == shown["message_id"]
    assert answer.get("disable_notification") in (None, False, "false")
    # the page's conversation has it once, as the page's own message
    talk = (await (await both.client.get(f"/api/sessions/{S}", headers={"Host": HOST}))
            .json())["conversation"]
    assert [(e["kind"], e["text"]) for e in talk] == [
        ("sent", "run the flaky test again"), ("answer", "It passes **now**.")]
    # said once in the chat
    assert sum("run the flaky test again" in t
               for t in (str(p.get("text")) for p in both.fake.calls_of("sendMessage"))) == 1


@pytest.mark.parametrize("private", [True])
async def test_in_private_mode_the_chat_names_who_asked_on_the_page_and_not_what(both):
    both.start()
    await both.prompt("the CANARYPROMPT words")
    line = "🌐 jim · a prompt from @web on the page"
    await both.fake.wait_for("sendMessage", lambda p: str(p.get("text", "")).startswith(line))
    shown = _message(both.fake, line)
    await eventually(lambda: both.bot.state.live_id(f"typed:{S}:1"), what="its id kept")
    note = both.sessions.typed[-1][2]
    both.feed(S, "Stop", prompt_id=f"p-{note['msg_id']}",
              last_assistant_message="The CANARYANSWER.")
    done = await both.fake.wait_for("sendMessage",
                                    lambda p: str(p.get("text", "")).startswith("✅ jim · done"))
    assert int(done["reply_parameters"]["message_id"]) == shown["message_id"]
    await eventually(lambda: not both.bot.outbox.pending(), timeout=30.0, what="outbox drained")
    sent = both.fake.everything_received()
    assert "CANARYPROMPT" not in sent and "CANARYANSWER" not in sent
