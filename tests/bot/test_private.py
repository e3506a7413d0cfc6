"""Private mode on the real path: the real Daemon fed hook datagrams, the real chat over
HTTP against the fake Bot API, the real page application behind the Mini App door.

The canary test puts a marked word in every kind of content a session makes (an answer,
a command, a written file, a diff, a question, a file name, a project path, a file read
from disk, a prompt typed at the computer) and then searches everything the fake Bot
API was handed, every method and every field: none may be there, while the page shows
each one.  Approving on the page answers the waiting hook."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from bot.conftest import eventually
from fakes.sessionio import FakeSessions
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI
from web.conftest import init_data

from aipager import config
from tests.support.door import door

PUBLIC = "https://pager.example"
CANARIES = ("CANARYANSWER", "CANARYCMD", "CANARYDESC", "CANARYWRITE", "CANARYDIFF",
            "CANARYQUESTION", "CANARYOPTION", "CANARYFILENAME", "CANARYFILEBODY",
            "CANARYPROJECT", "CANARYREAD", "CANARYPROMPT", "CANARYCAPTION")


class Private:
    """The chat and the page of one daemon, private mode on."""

    def __init__(self, fake, daemon, bot, sessions, client, env, spawned) -> None:
        self.fake, self.daemon, self.bot, self.sessions = fake, daemon, bot, sessions
        self.client, self.env = client, env
        #: what the page handed to the daemon's loop (run by ``settle``)
        self.spawned = spawned
        self.auth = {"Host": "127.0.0.1:7180", "Authorization": f"tma {init_data(OWNER, TOKEN)}"}

    async def settle(self) -> None:
        """Run what the page handed to the daemon's loop (a file's check and copy)."""
        while self.spawned:
            await self.spawned.pop(0)

    def feed(self, session: str, event: str, **fields) -> None:
        doc = {"hook_event_name": event, "session": session, **fields}
        self.daemon.deliver([orjson.dumps(doc)])
        self.daemon.core.flush_cards()

    async def get(self, path: str):
        response = await self.client.get(path, headers=self.auth)
        assert response.status == 200, await response.text()
        return await response.json()

    async def post(self, path: str, body: dict):
        response = await self.client.post(path, json=body,
                                          headers={**self.auth, "Origin": "http://127.0.0.1:7180"})
        return response.status, await response.json()


@pytest.fixture
def public_url() -> str:
    return PUBLIC


@pytest.fixture
async def private(public_url):
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
        extra = {"private": True, **({"web_public_url": public_url} if public_url else {})}
        cfg = config.Config(bot_token=TOKEN, chat_id=OWNER["id"], extra=extra)
        config.save(env, cfg)
        bot = ChatBot(env, cfg)
        # diff previews on: in private mode they must still never reach Telegram
        bot.state.set_pref(OWNER["id"], "diffs", True)
        sessions = FakeSessions()
        holder: list = []
        live = WebNotifier(lambda: holder[0].sessions if holder else None)
        daemon = Daemon(env, notifier=FanoutNotifier([bot.notifier, live]),
                        session_io=sessions)
        holder.append(daemon)
        bot.attach(door(daemon))
        spawned: list = []
        actions = WebActions(door(daemon), live, spawned.append)
        people = People(env, Members(env, cfg))
        people.attach(actions.port)  # as WebPage.attach does
        app = make_app(actions, live, Logins(), people,
                       allowed_hosts=Settings().hosts(7180),
                       allowed_origins=Settings().origins(7180))
        client = TestClient(TestServer(app))
        await client.start_server()
        task = asyncio.create_task(bot.run())
        try:
            yield Private(fake, daemon, bot, sessions, client, env, spawned)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await client.close()
            for coro in spawned:
                coro.close()


@pytest.fixture
def hook_reply():
    """A datagram socket standing where a waiting hook listens for its decision."""
    path = os.path.join(os.environ["AIPAGER_INSTANCE_DIR"], "reply-private.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    yield path, sock
    sock.close()


def _leaks(fake: FakeBotAPI) -> list[str]:
    sent = fake.everything_received()
    return [c for c in CANARIES if c in sent]


def _buttons(message: dict) -> dict[str, dict]:
    return {b["text"]: b for row in (message.get("reply_markup") or {}).get("inline_keyboard", [])
            for b in row}


async def _bell(fake: FakeBotAPI, start: str) -> dict:
    await fake.wait_for("sendMessage", lambda p: str(p.get("text", "")).startswith(start))
    return next(m for m in fake.bot_messages(OWNER["id"]) if m.get("text", "").startswith(start))


async def test_no_canary_reaches_telegram_and_the_page_shows_each(private, tmp_path, hook_reply):
    path, sock = hook_reply
    project = tmp_path / "CANARYPROJECT"
    project.mkdir()
    edited = project / "notes.md"
    edited.write_text("first line\nold words\nlast line\n")
    sent = project / "CANARYFILENAME.md"
    sent.write_bytes(b"# CANARYFILEBODY\n")
    session = "claude-jim"
    private.sessions.live.add(session)
    private.feed(session, "SessionStart", source="startup", session_id="sid-jim",
                 cwd=str(project), transcript_path="/nonexistent/jim.jsonl")
    # typed at the computer: no chat message picked it up
    private.feed(session, "UserPromptSubmit", prompt="please CANARYPROMPT", prompt_id="p1",
                 cwd=str(project))
    private.feed(session, "PreToolUse", tool_name="Read", tool_use_id="r1",
                 tool_input={"file_path": str(project / "CANARYREAD.txt")})
    private.feed(session, "PostToolUse", tool_name="Read", tool_use_id="r1",
                 tool_input={"file_path": str(project / "CANARYREAD.txt")}, tool_response={})
    private.feed(session, "PreToolUse", tool_name="Bash", tool_use_id="b1",
                 tool_input={"command": "echo CANARYCMD", "description": "CANARYDESC"})
    private.feed(session, "PermissionRequest", tool_name="Bash", tool_use_id="b1",
                 tool_input={"command": "echo CANARYCMD", "description": "CANARYDESC"},
                 aipager_reply_addr=path, aipager_request_id="req-b1")
    asks = await _bell(private.fake, "🔐 jim needs you")
    # the page opens at this request: a Mini App button, no content in its address
    button = _buttons(asks)["📟 Open on the page"]
    opened = urlsplit(button["web_app"]["url"])
    assert f"{opened.scheme}://{opened.netloc}" == PUBLIC
    assert parse_qs(opened.query) == {"session": [session], "request": ["p:b1:"]}
    assert "⏹ Stop" in _buttons(asks) and "✅ Allow" not in _buttons(asks)

    # approving happens on the page, through the Mini App door, and reaches the hook
    state = await private.get("/api/state")
    need = next(n for n in state["needs"] if n["key"] == "p:b1:")
    assert "CANARYCMD" in json.dumps(need) and state["me"]["private"] is True
    status, result = await private.post("/api/answer", {"session": session, "key": "p:b1:",
                                                        "act": "allow"})
    assert status == 200 and result["ok"], result
    reply = json.loads(await asyncio.to_thread(sock.recv, 65536))
    assert reply["request_id"] == "req-b1" and reply["decision"] == {"behavior": "allow"}
    await private.fake.wait_for("editMessageText",
                                lambda p: "allowed by" in str(p["text"]))
    private.feed(session, "PostToolUse", tool_name="Bash", tool_use_id="b1",
                 tool_input={"command": "echo CANARYCMD"}, tool_response={"stdout": "ok"})

    private.feed(session, "PermissionRequest", tool_name="Write", tool_use_id="w1",
                 tool_input={"file_path": str(project / "new.txt"), "content": "CANARYWRITE\n"})
    private.feed(session, "PermissionRequest", tool_name="Edit", tool_use_id="e1",
                 tool_input={"file_path": str(edited), "old_string": "old words",
                             "new_string": "CANARYDIFF words"})
    questions = [{"question": "CANARYQUESTION?", "header": "Pick", "multiSelect": False,
                  "options": [{"label": "CANARYOPTION", "description": ""}]}]
    private.feed(session, "PreToolUse", tool_name="AskUserQuestion", tool_use_id="q1",
                 tool_input={"questions": questions})
    private.feed(session, "PermissionRequest", tool_name="AskUserQuestion", tool_use_id="q1",
                 tool_input={"questions": questions})
    await _bell(private.fake, "❓ jim asks")
    state = await private.get("/api/state")
    shown = json.dumps(state["needs"])
    for canary in ("CANARYWRITE", "CANARYDIFF", "CANARYQUESTION", "CANARYOPTION"):
        assert canary in shown, canary
    private.feed(session, "PostToolUse", tool_name="Write", tool_use_id="w1",
                 tool_input={"file_path": str(project / "new.txt"), "content": "CANARYWRITE\n"},
                 tool_response={})
    private.feed(session, "PostToolUse", tool_name="Edit", tool_use_id="e1",
                 tool_input={"file_path": str(edited), "old_string": "old words",
                             "new_string": "CANARYDIFF words"}, tool_response={})

    files_input = {"files": [str(sent)], "caption": "CANARYCAPTION"}
    private.feed(session, "PreToolUse", tool_name="SendUserFile", tool_use_id="f1",
                 tool_input=files_input)
    private.feed(session, "PostToolUse", tool_name="SendUserFile", tool_use_id="f1",
                 tool_input=files_input, tool_response={}, cwd=str(project))
    await _bell(private.fake, "📎 jim has a file for you")
    private.feed(session, "Stop", prompt_id="p1",
                 last_assistant_message="The CANARYANSWER is **42**.")
    done = await _bell(private.fake, "✅ jim · done")
    assert "📟 Open on the page" in _buttons(done)

    # the page has every one of them
    page = await private.get(f"/api/sessions/{session}")
    everything = json.dumps(page) + json.dumps(await private.get("/api/state"))
    for canary in ("CANARYANSWER", "CANARYPROMPT", "CANARYFILENAME", "CANARYPROJECT",
                   "CANARYCAPTION"):
        assert canary in everything, canary
    # the card edits and the status line go out after the answer at the chat's real pace
    # (about one write a second after a burst): let the outbox drain
    await eventually(lambda: not private.bot.outbox.pending(), timeout=30.0,
                     what="the outbox drained")
    assert _leaks(private.fake) == [], private.fake.call_log(60)
    assert not private.fake.calls_of("sendDocument") and not private.fake.calls_of("sendPhoto")


async def test_switching_on_says_once_what_stays_and_what_is_theirs(private):
    told = await _bell(private.fake, "🔒 Private mode is on")
    assert "yours to send" in told["text"] and "nothing sent is edited away" in told["text"]
    assert _buttons(told)["✍️ Write on the page"]["web_app"]["url"] == f"{PUBLIC}/"
    session = "claude-ann"
    private.sessions.live.add(session)
    private.feed(session, "SessionStart", source="startup", session_id="sid-ann", cwd="/tmp",
                 transcript_path="/nonexistent/ann.jsonl")
    private.feed(session, "UserPromptSubmit", prompt="hello", prompt_id="p1")
    private.feed(session, "Stop", prompt_id="p1", last_assistant_message="hi")
    await _bell(private.fake, "✅ ann · done")
    assert sum("Private mode is on" in str(p.get("text")) for p in
               private.fake.calls_of("sendMessage")) == 1

    # switched off: said once, and the content comes back
    cfg = private.bot.members.current()
    config.save(private.env, config.Config(cfg.bot_token, cfg.chat_id,
                                           extra={**cfg.extra, "private": False}))
    os.utime(config.paths.config_file(private.env), (time.time() + 5, time.time() + 5))
    await _bell(private.fake, "🔓 Private mode is off")
    private.feed(session, "UserPromptSubmit", prompt="again", prompt_id="p2")
    private.feed(session, "Stop", prompt_id="p2", last_assistant_message="plain words back")
    await private.fake.wait_for("sendMessage", lambda p: "plain words back" in str(p["text"]))


@pytest.mark.parametrize("public_url", [""])
async def test_without_a_public_address_the_bell_points_at_the_computer(private):
    session = "claude-bo"
    private.sessions.live.add(session)
    private.feed(session, "SessionStart", source="startup", session_id="sid-bo", cwd="/tmp",
                 transcript_path="/nonexistent/bo.jsonl")
    private.feed(session, "PermissionRequest", tool_name="Bash", tool_use_id="b9",
                 tool_input={"command": "echo CANARYCMD"})
    asks = await _bell(private.fake, "🔐 bo needs you")
    assert "aipager page" in asks["text"] and "answer it on the page" in asks["text"]
    assert not any("web_app" in b or "url" in b for b in _buttons(asks).values())
    # an answer waits for nobody: read it there, nothing to answer
    private.feed(session, "UserPromptSubmit", prompt="CANARYPROMPT", prompt_id="p2")
    private.feed(session, "Stop", prompt_id="p2", last_assistant_message="CANARYANSWER")
    await private.fake.wait_for("sendMessage", lambda p: "✅ bo · done" in str(p.get("text"))
                                and "on the page" in str(p.get("text")))
    (done,) = [m for m in private.fake.bot_messages(OWNER["id"])
               if m.get("text", "").startswith("✅ bo · done") and "on the page" in m["text"]]
    assert "Read it on the page on your computer" in done["text"]
    assert "answer it" not in done["text"]
    assert _leaks(private.fake) == []


async def test_a_file_claude_sends_is_downloaded_from_the_page_and_a_secret_one_is_refused(
        private, tmp_path):
    """In private mode Telegram hears "📎 jim has a file for you": the file itself is a
    download on the page, checked as the chat checks an upload (the floor keeps aipager's
    config, which holds the bot token, from everyone)."""
    project = tmp_path / "proj"
    project.mkdir()
    report = project / "report.html"
    report.write_bytes(b"<script>alert(1)</script> CANARYFILEBODY\n")
    session = "claude-jim"
    private.sessions.live.add(session)
    private.feed(session, "SessionStart", source="startup", session_id="sid-jim",
                 cwd=str(project), transcript_path="/nonexistent/jim.jsonl")
    private.feed(session, "UserPromptSubmit", prompt="send the report", prompt_id="p1",
                 cwd=str(project))
    from aipager.proto import paths

    secret = paths.config_file(private.env)
    files_input = {"files": [str(report), secret]}
    private.feed(session, "PreToolUse", tool_name="SendUserFile", tool_use_id="f1",
                 tool_input=files_input)
    private.feed(session, "PostToolUse", tool_name="SendUserFile", tool_use_id="f1",
                 tool_input=files_input, tool_response={}, cwd=str(project))
    await _bell(private.fake, "📎 jim has a file for you")
    await private.settle()
    page = await private.get(f"/api/sessions/{session}")
    (entry,) = [e for e in page["conversation"] if e["kind"] == "file"]
    assert "checking" not in entry  # the daemon's output came checked
    assert [f["name"] for f in entry["sent"]] == ["report.html"]
    assert [r["name"] for r in entry["refused"]] == [os.path.basename(secret)]
    response = await private.client.get(f"/api/files/{entry['sent'][0]['id']}",
                                        headers=private.auth)
    assert response.status == 200
    # a download, never rendered on the page's own origin
    assert response.headers["Content-Type"] == "application/octet-stream"
    assert response.headers["Content-Disposition"].startswith("attachment;")
    assert await response.read() == report.read_bytes()
    # a made-up key, or no sign-in: nothing
    assert (await private.client.get("/api/files/nope", headers=private.auth)).status == 404
    stranger = {"Host": "127.0.0.1:7180"}
    assert (await private.client.get(f"/api/files/{entry['sent'][0]['id']}",
                                     headers=stranger)).status in (401, 403)
    assert "CANARYFILEBODY" not in private.fake.everything_received()


def test_an_edited_allow_says_it_was_edited_and_by_whom_and_not_what_ran():
    """An allow a person edited first (✏️ Edit): in private mode the request's line says it
    was edited and who allowed it, never the corrected command or path."""
    from aipager.bot import private as private_mode
    from aipager.port.outputs import RequestClosed

    out = RequestClosed(session="claude-jim", key="p:t1:", via="hook_decision", answer="allow",
                        who="@ana", edited="/srv/secret/plan.txt")
    bell = private_mode.view(out, "jim", None, time.time())
    assert bell.text == "jim · ✏️ edited and allowed by @ana"
    assert "/srv" not in bell.text
