"""The chat and the page are two renderings of one service: each use case, done from both,
does the same thing and says the same words, in the person's language, whether the
session runs on the chat's own machine or on a host joined to it as a hub.

One real ``Daemon`` (its sessions' terminals faked by ``FakeSessions``, fed hook datagrams)
stands under the real chat (aiogram over HTTP against the fake Bot API, a team group) and
the real page application (behind its Mini App door, each person signed in with their own
Telegram initData).  Every case asks the same thing of both and compares what the person
reads: a tap's toast or the chat's reply against the page's message.  Each case runs twice
(``both``'s parameter): ``here``, the session is that daemon's own; ``host``, that daemon is
a hub and the session is on host ``box``, joined through a real nats-server, whose own
service decides (its sessions, its tasks' authors, its policy and its home's floor).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket

import orjson
import pytest
from support.screens import at_trust_dialog
from aiohttp.test_utils import TestClient, TestServer
from bot.conftest import eventually
from fakes.sessionio import FakeSessions
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI
from web.conftest import init_data

from aipager import config
from tests.support.door import door

GROUP = -100777
GUEST = {"id": 5151, "is_bot": False, "first_name": "Gus", "username": "guest"}
GUESTA = {"id": 5252, "is_bot": False, "first_name": "Ana", "username": "ana",
          "language_code": "pt-br"}
READER = {"id": 6161, "is_bot": False, "first_name": "Rita", "username": "reader"}
ESCAPE = b"\x1b"


class Surfaces:
    """The chat and the page of one daemon, and the machine its sessions run on (``daemon``
    itself, or the hub's host ``box``: then ``host`` is ``"box"``)."""

    def __init__(self, fake, daemon, bot, sessions, client, port=None, host: str = "") -> None:
        self.fake, self.daemon, self.bot, self.sessions, self.client = (fake, daemon, bot,
                                                                         sessions, client)
        #: what the chat and the page stand on (the daemon, or the hub's port)
        self.port = port or daemon
        self.host = host

    @property
    def env(self) -> dict:
        """The environment of the machine the sessions run on."""
        return self.daemon.env

    def said(self, label: str) -> str:
        """How a result's words name session ``label`` (a host's with its host: the words
        are the same on every surface, which may show the bare label elsewhere)."""
        return f"{label}@{self.host}" if self.host else label

    def terminal(self, session: str) -> str:
        """``session`` as the machine it runs on names it."""
        return session.removesuffix(f"@{self.host}") if self.host else session

    def feed(self, session: str, event: str, **fields) -> None:
        self.daemon.deliver([orjson.dumps({"hook_event_name": event,
                                            "session": self.terminal(session), **fields})])
        self.daemon.core.flush_cards()

    def start(self, label: str, cwd: str = "/tmp") -> str:
        session = f"claude-{label}"
        self.sessions.live.add(session)
        self.feed(session, "SessionStart", source="startup", session_id=f"sid-{label}",
                  cwd=cwd, transcript_path=f"/nonexistent/{label}.jsonl")
        return f"{session}@{self.host}" if self.host else session

    async def started(self, label: str, cwd: str = "/tmp") -> str:
        """``start``, once the chat and the page see the session."""
        session = self.start(label, cwd)
        await eventually(lambda: self.port.sessions.get(session) is not None,
                         what=f"the chat to see {session}")
        return session

    async def page_get(self, user: dict, path: str) -> dict:
        """What the page reads for ``user`` at ``path``."""
        response = await self.client.get(path, headers={
            "Host": "127.0.0.1:7180", "Authorization": f"tma {init_data(user, TOKEN)}"})
        assert response.status == 200, response.status
        return await response.json()

    async def page(self, user: dict, path: str, body: dict, lang: str = "en") -> str:
        """What the page says to ``user`` after posting ``body`` to ``path``."""
        response = await self.client.post(path, json=body, headers={
            "Host": "127.0.0.1:7180", "Origin": "http://127.0.0.1:7180",
            "Authorization": f"tma {init_data(user, TOKEN)}", "Accept-Language": lang})
        result = await response.json()
        # refused: a 4xx with the same body (the page shows its message either way)
        assert response.status in (200, 403, 409), (response.status, result)
        return str(result["message"])

    async def request_buttons(self, needle: str = "") -> tuple[int, dict[str, str]]:
        """The chat's open permission request message (with ``needle`` in it) and its
        buttons, once it is sent."""
        def buttons(m: dict) -> dict[str, str]:
            return {b["text"]: b.get("callback_data") for row in
                    (m.get("reply_markup") or {}).get("inline_keyboard", []) for b in row}

        def found() -> dict | None:
            return next((m for m in reversed(self.fake.bot_messages(GROUP))
                         if needle in str(m.get("text")) and "✅ Allow" in buttons(m)), None)
        message = await eventually(found, what=f"the request {needle}")
        return message["message_id"], buttons(message)

    async def toast(self, user: dict, message_id: int, data: str) -> str:
        """What the chat's toast says to ``user`` after tapping the button of ``data``."""
        query = await self.fake.user_taps(message_id, data, user=user, chat_id=GROUP)
        answer = await self.fake.wait_for("answerCallbackQuery",
                                          lambda p: p["callback_query_id"] == query)
        return str(answer.get("text", ""))

    async def reply(self, user: dict, text: str) -> str:
        """What the chat answers ``user``'s message with (a reply to it)."""
        sent = await self.fake.user_says(text, user=user, chat_id=GROUP)
        said = await self.fake.wait_for(
            "sendMessage", lambda p: str((p.get("reply_parameters") or {}).get("message_id"))
            == str(sent["message_id"]))
        return str(said["text"])


@pytest.fixture(params=["here", "host"])
async def both(request, tmp_path_factory):
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
    fake.add_group_chat(GROUP, "team")
    members = (config.Member(OWNER["id"], "owner", "owner"),
               config.Member(GUEST["id"], "user", "guest"),
               config.Member(GUESTA["id"], "user", "ana"),
               config.Member(READER["id"], "read_only", "reader"))
    async with contextlib.AsyncExitStack() as stack:
        base = await stack.enter_async_context(fake.running())
        env = dict(os.environ, AIPAGER_TELEGRAM_API_BASE=base)
        cfg = config.Config(bot_token=TOKEN, chat_id=GROUP, members=members)
        config.save(env, cfg)
        bot = ChatBot(env, cfg)
        sessions = FakeSessions()
        holder: list = []
        live = WebNotifier(lambda: holder[0].sessions if holder else None)
        notifier = FanoutNotifier([bot.notifier, live])
        daemon = Daemon(env, notifier=notifier, session_io=sessions)
        port, tasks, surfaces_of = daemon, [], (daemon, sessions, "")
        if request.param == "host":
            port, tasks, surfaces_of = await _hub_with_host(stack, tmp_path_factory, env,
                                                            daemon, notifier, bot)
        holder.append(port)
        bot.attach(door(port))
        spawned: list = []
        actions = WebActions(door(port), live, spawned.append)
        people = People(env, Members(env, cfg))
        people.attach(actions.port)  # as WebPage.attach does
        app = make_app(actions, live, Logins(), people,
                       allowed_hosts=Settings().hosts(7180),
                       allowed_origins=Settings().origins(7180))
        client = TestClient(TestServer(app))
        await client.start_server()
        tasks.append(asyncio.create_task(bot.run()))
        try:
            machine, its_sessions, host = surfaces_of
            yield Surfaces(fake, machine, bot, its_sessions, client, port, host)
        finally:
            for task in reversed(tasks):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await client.close()
            for coro in spawned:
                coro.close()


async def _hub_with_host(stack, tmp_path_factory, env, daemon, notifier, bot):
    """``daemon`` as a hub (wired as ``main.compose_hub`` wires it) and host ``box`` joined
    to it through a real nats-server: (the hub's port, the link's tasks, (box's daemon, its
    terminals, "box"))."""
    from hub.conftest import HUB_PW, PASSWORDS, Broker, instance

    from aipager.daemon.app import Daemon
    from aipager.hub.creds import Creds
    from aipager.hub.host import HostLink
    from aipager.hub.link import HubLink
    from aipager.hub.port import HubPort

    root = tmp_path_factory.mktemp("parity-hub")
    broker = Broker(root)
    broker.start()
    stack.callback(broker.kill)
    link = HubLink(env, broker.url, Creds("hub", HUB_PW), notifier, timeout=5.0,
                   hosts=lambda: ["box"], before_ack=bot.save, local_name="laptop")
    port = HubPort(daemon, link)
    box_env = instance(root, "box")
    box_link = HostLink(box_env, broker.url, Creds("box", PASSWORDS["box"]))
    box_sessions = FakeSessions()
    box = Daemon(box_env, notifier=box_link, session_io=box_sessions)
    box_link.attach(door(box))
    tasks = [asyncio.create_task(link.run()), asyncio.create_task(box_link.run())]
    await eventually(lambda: "box" in link.view.hosts and link.view.hosts["box"].online(), 15,
                     "box online")
    return port, tasks, (box, box_sessions, "box")


@pytest.fixture
def hook_reply(both):
    """A datagram socket standing where a waiting hook listens for its decision (on the
    machine the session runs on)."""
    path = os.path.join(both.env["AIPAGER_INSTANCE_DIR"], "reply-parity.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(0.3)
    yield path, sock
    sock.close()


def _owners_task_asks(both: Surfaces, session: str, reply_path: str) -> None:
    """The owner's task in ``session`` asks to run a command (a hook waits at
    ``reply_path``)."""
    both.feed(session, "UserPromptSubmit", prompt="deploy", prompt_id="p1")
    both.feed(session, "PreToolUse", tool_name="Bash", tool_use_id="b1",
              tool_input={"command": "make deploy"})
    both.feed(session, "PermissionRequest", tool_name="Bash", tool_use_id="b1",
              tool_input={"command": "make deploy"}, aipager_reply_addr=reply_path,
              aipager_request_id="req-b1")


async def test_a_member_may_not_answer_anothers_request_and_both_say_so_in_their_language(
        both, hook_reply):
    path, sock = hook_reply
    session = await both.started("jim")
    _owners_task_asks(both, session, path)
    message_id, buttons = await both.request_buttons()

    chat = await both.toast(GUEST, message_id, buttons["✅ Allow"])
    page = await both.page(GUEST, "/api/answer", {"session": session, "key": "p:b1:",
                                                  "act": "allow"})
    assert chat == page == "Only the task's author or an admin may answer this."
    # in Portuguese for the member who reads it
    chat_pt = await both.toast(GUESTA, message_id, buttons["✅ Allow"])
    page_pt = await both.page(GUESTA, "/api/answer", {"session": session, "key": "p:b1:",
                                                      "act": "allow"}, lang="pt-BR")
    assert chat_pt == page_pt != chat, (chat_pt, page_pt)
    # nothing reached the waiting hook
    with pytest.raises(TimeoutError):
        sock.recv(65536)


async def test_a_request_answered_on_one_surface_reads_the_same_on_the_other(both, hook_reply):
    path, sock = hook_reply
    session = await both.started("jim")
    _owners_task_asks(both, session, path)
    message_id, buttons = await both.request_buttons()
    # the owner allows on the page; the hook takes it
    said = await both.page(OWNER, "/api/answer", {"session": session, "key": "p:b1:",
                                                  "act": "allow"})
    assert said == "Allowed."
    assert orjson.loads(await asyncio.to_thread(sock.recv, 65536))["decision"] == {
        "behavior": "allow"}
    # then a second answer, from either surface, is told the same thing
    page = await both.page(OWNER, "/api/answer", {"session": session, "key": "p:b1:",
                                                  "act": "deny"})
    # (the chat's Deny, tapped on a phone that still showed the buttons)
    chat = await both.toast(OWNER, message_id, buttons["❌ Deny"])
    assert page == chat and page in ("Already answered.", "This request is no longer open."), (
        page, chat)


async def test_a_read_only_member_cannot_prompt_from_either_surface(both):
    session = await both.started("jim")
    chat = await both.reply(READER, "/jim hello")
    page = await both.page(READER, f"/api/sessions/{session}/prompt", {"text": "hello"})
    assert "Your role may not send messages to Claude here." in chat
    assert page == "Your role may not send messages to Claude here."
    assert both.sessions.typed == []


async def test_a_message_during_anothers_task_is_held_with_the_same_words(both):
    session = await both.started("jim")
    both.feed(session, "UserPromptSubmit", prompt="long job", prompt_id="p1")
    chat = await both.reply(GUEST, "/jim from the chat")
    page = await both.page(GUEST, f"/api/sessions/{session}/prompt", {"text": "from the page"})
    assert chat == page == f"⏳ queued after the terminal's task in {both.said('jim')}"
    assert both.sessions.typed == []


async def test_stopping_a_session_that_works_on_nothing_reads_the_same(both):
    session = await both.started("jim")
    chat = await both.reply(OWNER, "/stop jim")
    page = await both.page(OWNER, f"/api/sessions/{session}/stop", {})
    assert chat == page == f"{both.said('jim')} is not working on anything."
    assert both.sessions.keys == []
    # a task running: both press ⏹ (the second within the daemon's window presses nothing)
    both.feed(session, "UserPromptSubmit", prompt="long job", prompt_id="p1")
    page = await both.page(OWNER, f"/api/sessions/{session}/stop", {})
    assert page == f"⏹ Stop sent to {both.said('jim')}."
    await eventually(lambda: both.sessions.keys == [(both.terminal(session), [ESCAPE])],
                     what="⏹ pressed")


async def test_allow_folder_for_this_session_remembers_the_same_from_either_surface(
        both, hook_reply):
    """"📁 Allow, and reads in folder · this session" hands Claude Code the same one
    suggestion from the chat and from the page (the page once allowed every suggestion, so
    it asked again), and both say the same of what it grants."""
    path, sock = hook_reply
    sock.settimeout(5)
    session = await both.started("jim")
    folder = {"type": "addDirectories", "directories": ["/srv/data"], "destination": "session"}
    mode = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    decisions = []
    for n, answer_on in enumerate(("chat", "page")):
        both.feed(session, "PermissionRequest", tool_name="Read", tool_use_id=f"t{n}",
                  tool_input={"file_path": f"/srv/data/{n}.csv"}, aipager_reply_addr=path,
                  aipager_request_id=f"req-t{n}", permission_suggestions=[folder, mode])
        message_id, buttons = await both.request_buttons(f"/srv/data/{n}.csv")
        scoped = "📁 Allow, and reads in /srv/data · this session"
        assert scoped in buttons, buttons
        if answer_on == "chat":
            said = await both.toast(OWNER, message_id, buttons[scoped])
        else:
            state = await (await both.client.get("/api/state", headers={
                "Host": "127.0.0.1:7180",
                "Authorization": f"tma {init_data(OWNER, TOKEN)}"})).json()
            need = next((r for r in state["needs"] if r.get("key") == f"p:t{n}:"), None)
            assert need is not None, state["needs"]
            acts = {a["label"]: a["act"] for a in need["answers"]}
            assert scoped in acts, acts
            act = acts[scoped]
            said = await both.page(OWNER, "/api/answer", {"session": session,
                                                          "key": f"p:t{n}:", "act": act})
        # what Claude Code does with it, for how long: not "Always allowed"
        assert said == ("Allowed. For this session only, reads in /srv/data no longer ask; "
                        "a change there still asks."), said
        decisions.append(orjson.loads(await asyncio.to_thread(sock.recv, 65536))["decision"])
    assert decisions[0] == decisions[1] == {"behavior": "allow", "updatedPermissions": [folder]}


def _project_with_changes(home: str) -> str:
    """A git project whose work tree changed a file, added one, and added a link to the
    ``home``'s SSH key (which no member's task may read there)."""
    import subprocess

    os.makedirs(os.path.join(home, ".ssh"), exist_ok=True)
    with open(os.path.join(home, ".ssh", "id_rsa"), "w") as f:
        f.write("PRIVATE KEY\n")
    proj = os.path.join(home, "proj")
    os.makedirs(proj)
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=proj, check=True)
    with open(os.path.join(proj, "app.py"), "w") as f:
        f.write("print('one')\n")
    subprocess.run([*git, "add", "."], cwd=proj, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], cwd=proj, check=True)
    with open(os.path.join(proj, "app.py"), "w") as f:
        f.write("print('two')\n")
    with open(os.path.join(proj, "notes.md"), "w") as f:
        f.write("new notes\n")
    os.symlink(os.path.join(home, ".ssh", "id_rsa"), os.path.join(proj, "key.txt"))
    return proj


async def test_diff_shows_the_same_changes_on_both_surfaces_as_far_as_each_may_read(both):
    session = await both.started("jim", cwd=_project_with_changes(both.env["HOME"]))
    # a member: the two files, not the link to the key (counted, never named)
    chat = await both.reply(GUEST, "/diff jim")
    page = await both.page_get(GUEST, f"/api/sessions/{session}/changes")
    head = (f"📝 {both.said('jim')}: changed since the last commit (files: 2)\n"
            "Not shown, as your role may not read them (files: 1)")
    assert page["ok"] and page["message"] == head
    assert chat.startswith(head + "\n")
    for shown in (chat, page["diff"]):
        assert "-print('one')" in shown and "+print('two')" in shown and "+new notes" in shown
        assert "key.txt" not in shown and "id_rsa" not in shown
    assert page["files"] == ["app.py", "notes.md"]
    # the owner sees the link too
    owner = await both.page_get(OWNER, f"/api/sessions/{session}/changes")
    assert owner["files"] == ["app.py", "key.txt", "notes.md"] and owner["hidden"] == 0
    # a reader may not prompt, so may not read the changes either: the same words
    chat = await both.reply(READER, "/diff jim")
    page = await both.page_get(READER, f"/api/sessions/{session}/changes")
    assert not page["ok"] and page["message"] == "Your role may not send messages to Claude here."
    assert page["message"] in chat


async def test_a_session_at_its_folder_trust_dialog_is_not_typed_into_from_either_surface(
        both, tmp_path):
    """Started in a folder Claude Code does not trust, a session waits at the trust dialog
    (no hook runs before it): a message would answer the dialog, so both surfaces decline
    it with the same words, as its screen shows the dialog.  On a hub the host reads its
    own session's screen."""
    folder = tmp_path / "untrusted"
    folder.mkdir()
    reg = both.daemon.core.registry
    sess = reg.ensure("claude-fresh")
    sess.socket_seen, sess.cwd = True, str(folder)
    both.sessions.live.add("claude-fresh")
    at_trust_dialog(both.sessions, "claude-fresh")
    reg.touch(sess)
    session = f"claude-fresh@{both.host}" if both.host else "claude-fresh"
    await eventually(lambda: both.port.sessions.get(session) is not None, what="seen")
    chat = await both.reply(OWNER, "/fresh hello")
    page = await both.page(OWNER, f"/api/sessions/{session}/prompt", {"text": "hello"})
    assert chat == page == f"{both.said('fresh')} waits for you to trust its folder first."
    assert both.sessions.typed == []


async def test_a_member_may_neither_end_nor_start_a_session_from_either_surface(both):
    """Ending and starting sessions is an admin's (``KillSession``/``StartSession`` name
    the right): a member hears the same refusal on both, and nothing ends or starts."""
    session = await both.started("jim")
    chat = await both.reply(GUEST, "/kill jim")
    page = await both.page(GUEST, f"/api/sessions/{session}/kill", {})
    assert page and page in chat, (chat, page)
    chat = await both.reply(GUEST, "/new zed")
    page = await both.page(GUEST, "/api/sessions", {"name": "zed"})
    assert page and page in chat, (chat, page)
    assert both.terminal(session) in both.sessions.live
    assert both.port.sessions.get(f"claude-zed@{both.host}" if both.host else "claude-zed") \
        is None


async def test_a_members_answer_to_anothers_question_is_refused_alike_and_the_owners_taken(
        both):
    """Claude's question (AskUserQuestion) in the owner's task: a member's pick is refused
    with the same words on both surfaces; the owner's pick on the page reaches the
    terminal (the picker's keys) and is then closed on the chat too."""
    session = await both.started("jim")
    questions = [{"question": "Which colour?", "header": "Colour", "multiSelect": False,
                  "options": [{"label": "Red", "description": ""},
                              {"label": "Blue", "description": ""}]}]
    both.feed(session, "UserPromptSubmit", prompt="pick", prompt_id="p1")
    both.feed(session, "PreToolUse", tool_name="AskUserQuestion", tool_use_id="q1",
              tool_input={"questions": questions})
    both.feed(session, "PermissionRequest", tool_name="AskUserQuestion", tool_use_id="q1",
              tool_input={"questions": questions})

    async def need() -> dict:
        async def found() -> dict | None:
            needs = (await both.page_get(OWNER, f"/api/sessions/{session}"))["needs"]
            return next((n for n in needs if n.get("key")), None)

        deadline = asyncio.get_running_loop().time() + 10
        while (got := await found()) is None:
            assert asyncio.get_running_loop().time() < deadline, "the page never showed it"
            await asyncio.sleep(0.05)
        return got

    key = (await need())["key"]
    message = await eventually(lambda: next(
        (m for m in both.fake.bot_messages(GROUP) if str(m.get("text", "")).startswith("❓")
         and "Which colour?" in m["text"]), None), what="the question in the chat")
    buttons = {b["text"]: b.get("callback_data") for row in
               message["reply_markup"]["inline_keyboard"] for b in row}
    pick = next(data for text, data in buttons.items() if "Red" in text)
    chat = await both.toast(GUEST, message["message_id"], pick)
    page = await both.page(GUEST, "/api/question", {"session": session, "key": key,
                                                    "answers": [{"picks": [0]}]})
    assert chat == page == "Only the task's author or an admin may answer this.", (chat, page)
    assert both.sessions.keys == []
    said = await both.page(OWNER, "/api/question", {"session": session, "key": key,
                                                    "answers": [{"picks": [0]}]})
    assert said and "Only" not in said, said
    await eventually(lambda: both.sessions.keys, what="the pick pressed in the terminal")


async def _told(both: Surfaces, user: dict, text: str, needle: str) -> str:
    """What the chat answers ``user``'s ``text`` with (the first message holding ``needle``)."""
    start = len(both.fake.calls_of("sendMessage"))
    await both.fake.user_says(text, user=user, chat_id=GROUP)
    return await eventually(lambda: next(
        (str(p["text"]) for p in both.fake.calls_of("sendMessage")[start:]
         if needle in str(p["text"])), None), what=f"the chat's answer to {text}")


async def test_compact_and_model_do_the_same_here_and_on_a_host(both):
    """The chat's own use cases (the page offers neither): a member may compact but not
    switch models, the owner may; the same words whether the session is here or on a
    host, and the same keys reach its terminal."""
    await both.started("jim")
    jim = both.said("jim")
    assert "may not send messages" in await _told(both, READER, "/compact jim", "may not")
    assert await _told(both, GUEST, "/compact jim", "/compact") == f"📦 /compact sent to {jim}."
    await eventually(lambda: both.sessions.typed or both.sessions.pasted or both.sessions.keys,
                     what="/compact typed")
    assert await _told(both, GUEST, "/model opus", "🔒") == "🔒 Only an admin may do that here."
    assert await _told(both, OWNER, "/model opus", "🧠") == f"🧠 {jim}: switching to opus."
    await eventually(lambda: any("opus" in t[1] for t in both.sessions.typed),
                     what="the switch typed")



# -- an MCP server's form (AnswerForm) ----------------------------------------------------

FORM = os.path.join(os.path.dirname(__file__), "..", "fixtures", "elicitation.json")
#: the values a person gives the recorded form, as the hook hands them to the server
VALUES = {"channel": "beta", "note": "ship it", "replicas": 3, "notify": False}
#: how long the chat's message may take to change: a group's writes go at Telegram's pace
#: (``outbox.GROUP_SENDS_PER_MINUTE``), and filling in a form edits its message each step
EDITED = 30.0


def _form_asked(both: Surfaces, session: str, reply_path: str, n: int) -> str:
    """The server ``releaser``, in its ``n``-th call of the owner's task in ``session``, asks
    its recorded form (tests/fixtures/elicitation.json), a hook waiting at ``reply_path``;
    the request's key."""
    with open(FORM, encoding="utf-8") as fh:
        ev = orjson.loads(fh.read())
    for key in ("session_id", "transcript_path", "cwd", "prompt_id", "hook_event_name"):
        ev.pop(key)
    if n == 1:
        both.feed(session, "UserPromptSubmit", prompt="release it", prompt_id="p1")
    both.feed(session, "PreToolUse", tool_name="mcp__releaser__ask", tool_use_id=f"toolu_{n}",
              tool_input={})
    both.feed(session, "Elicitation", aipager_request_id=f"req-f{n}",
              aipager_reply_addr=reply_path, **ev)
    return f"f:req-f{n}"


def _form_done(both: Surfaces, session: str, n: int) -> None:
    """The server's ``n``-th call, its form answered, returns (its tool's PostToolUse)."""
    both.feed(session, "PostToolUse", tool_name="mcp__releaser__ask", tool_use_id=f"toolu_{n}",
              tool_input={}, tool_response={"ok": True})


def _buttons_of(message: dict | None) -> dict[str, str]:
    return {b["text"]: b.get("callback_data") for row in
            ((message or {}).get("reply_markup") or {}).get("inline_keyboard", []) for b in row}


async def _form_message(both: Surfaces, after: int = 0) -> int:
    """The chat's message of the form (newer than message ``after``), once sent."""
    def found() -> int | None:
        return next((m["message_id"] for m in both.fake.bot_messages(GROUP)
                     if m["message_id"] > after and str(m.get("text", "")).startswith("📋")
                     and "releaser asks" in m["text"] and "1/4 · Channel" in m["text"]), None)
    return await eventually(found, EDITED, "the form in the chat")


def _form_text(both: Surfaces, message_id: int) -> str:
    return str((both.fake.message(GROUP, message_id) or {}).get("text", ""))


async def _page_form(both: Surfaces, session: str, key: str) -> dict | None:
    """The page's need of form ``key`` in ``session`` (None: it shows none)."""
    needs = (await both.page_get(OWNER, f"/api/sessions/{session}"))["needs"]
    return next((n for n in needs if n.get("key") == key), None)


async def _page_shows_form(both: Surfaces, session: str, key: str) -> dict:
    deadline = asyncio.get_running_loop().time() + 10
    while (need := await _page_form(both, session, key)) is None:
        assert asyncio.get_running_loop().time() < deadline, "the page never showed the form"
        await asyncio.sleep(0.05)
    return need


def _hook_got(sock: socket.socket) -> dict:
    """What the waiting hook received (one datagram)."""
    return orjson.loads(sock.recv(65536))


async def test_a_members_answer_to_anothers_form_is_refused_alike_in_their_language(
        both, hook_reply):
    """An MCP server's form in the owner's task: a ``user``-role member may neither fill in a
    field on the chat nor answer the form on the page; both refuse with the same words, in
    the member's language, the form still asks its first field and its hook gets nothing.
    A ``read_only`` member is refused alike."""
    path, sock = hook_reply
    session = await both.started("rel")
    key = _form_asked(both, session, path, 1)
    message_id = await _form_message(both)
    buttons = _buttons_of(both.fake.message(GROUP, message_id))
    need = await _page_shows_form(both, session, key)
    assert need["kind"] == "form" and need["answerable"] is True, need

    chat = await both.toast(GUEST, message_id, buttons["Stable"])
    page = await both.page(GUEST, "/api/form", {"session": session, "key": key,
                                                "action": "accept", "content": VALUES})
    assert chat == page == "Only the task's author or an admin may answer this.", (chat, page)
    chat = await both.toast(GUEST, message_id, buttons["❌ Decline"])
    page = await both.page(GUEST, "/api/form", {"session": session, "key": key,
                                                "action": "decline"})
    assert chat == page == "Only the task's author or an admin may answer this.", (chat, page)
    # in Portuguese for the member who reads it
    chat_pt = await both.toast(GUESTA, message_id, buttons["❌ Decline"])
    page_pt = await both.page(GUESTA, "/api/form", {"session": session, "key": key,
                                                    "action": "decline"}, lang="pt-BR")
    assert chat_pt == page_pt != chat, (chat_pt, page_pt)
    # a reader may answer nothing
    chat_ro = await both.toast(READER, message_id, buttons["❌ Decline"])
    page_ro = await both.page(READER, "/api/form", {"session": session, "key": key,
                                                    "action": "decline"})
    assert chat_ro == page_ro and "may not" in page_ro, (chat_ro, page_ro)
    # still open on both, at its first field, and nothing reached the waiting hook
    assert "1/4 · Channel" in _form_text(both, message_id)
    assert _buttons_of(both.fake.message(GROUP, message_id)) == buttons
    assert (await _page_form(both, session, key)) is not None
    with pytest.raises(TimeoutError):
        sock.recv(65536)


async def test_a_form_filled_in_on_either_surface_hands_the_hook_the_same_values(
        both, hook_reply):
    """The owner fills in the same values on the chat (a field at a time) for one form and
    on the page (the whole form) for the next: both say the same, the waiting hook gets the
    same answer each time, and each form is closed on both surfaces (answered again from
    either, nothing more reaches the hook)."""
    path, sock = hook_reply
    sock.settimeout(5)
    session = await both.started("rel")
    # 1. on the chat
    first = _form_asked(both, session, path, 1)
    mid = await _form_message(both)
    await _page_shows_form(both, session, first)

    async def tap(label: str, then: str) -> str:
        said = await both.toast(OWNER, mid, _buttons_of(both.fake.message(GROUP, mid))[label])
        await eventually(lambda: then in _form_text(both, mid), EDITED, f"after {label}: {then}")
        return said

    async def typed(text: str, then: str) -> None:
        await both.fake.user_says(text, user=OWNER, chat_id=GROUP, reply_to=mid)
        await eventually(lambda: then in _form_text(both, mid), EDITED, f"after {text}: {then}")

    await tap("Beta", "2/4 · Release note")
    await typed("ship it", "3/4 · Replicas")
    await typed("3", "4/4 · Tell the team")
    await tap("No", "Send this to releaser?")
    old_buttons = _buttons_of(both.fake.message(GROUP, mid))
    chat = await both.toast(OWNER, mid, old_buttons["✅ Send"])
    by_chat = await asyncio.to_thread(_hook_got, sock)
    _form_done(both, session, 1)
    # 2. the next form, on the page
    second = _form_asked(both, session, path, 2)
    mid2 = await _form_message(both, after=mid)
    need = await _page_shows_form(both, session, second)
    assert [f["name"] for f in need["fields"]] == list(VALUES)
    page = await both.page(OWNER, "/api/form", {"session": session, "key": second,
                                                "action": "accept", "content": VALUES})
    by_page = await asyncio.to_thread(_hook_got, sock)
    assert chat == page == "Sent.", (chat, page)
    assert (by_chat["request_id"], by_page["request_id"]) == ("req-f1", "req-f2")
    assert by_chat["elicitation"] == by_page["elicitation"] == {"action": "accept",
                                                                "content": VALUES}
    # closed on both surfaces: the page's form in the chat (its buttons gone), the chat's
    # on the page
    await eventually(lambda: "✅ Sent by" in _form_text(both, mid2)
                     and not _buttons_of(both.fake.message(GROUP, mid2)), EDITED,
                     "the page's answer closing the form in the chat")
    assert "✅ Sent by" in _form_text(both, mid) and not _buttons_of(both.fake.message(GROUP, mid))
    # closed, each reads as what it asked and its verdict: the chat's names the values it
    # sent once, neither keeps a step or the "Send this?" question of a form in progress
    for message_id in (mid, mid2):
        text = _form_text(both, message_id)
        assert "1/4" not in text and "Send this to" not in text, text
    assert _form_text(both, mid).count("Channel: Beta") == 1
    for key in (first, second):
        assert (await _page_form(both, session, key)) is None, key
    # answered again, from either surface (a phone that still showed the buttons): neither
    # says it was sent, and nothing more reaches the hook
    page = await both.page(OWNER, "/api/form", {"session": session, "key": first,
                                                "action": "accept", "content": VALUES})
    chat = await both.toast(OWNER, mid, old_buttons["✅ Send"])
    assert "Sent." not in (page, chat), (page, chat)
    sock.settimeout(0.3)
    with pytest.raises(TimeoutError):
        sock.recv(65536)


async def test_declining_a_form_reads_and_does_the_same_on_either_surface(both, hook_reply):
    """❌ Decline on the chat and ``decline`` on the page: the same word, the same decline at
    the hook (no values), the form closed."""
    path, sock = hook_reply
    sock.settimeout(5)
    session = await both.started("rel")
    got = {}
    said = {}
    after = 0
    for n, on in ((1, "chat"), (2, "page")):
        key = _form_asked(both, session, path, n)
        after = await _form_message(both, after=after)
        await _page_shows_form(both, session, key)
        if on == "chat":
            said[on] = await both.toast(OWNER, after, _buttons_of(
                both.fake.message(GROUP, after))["❌ Decline"])
        else:
            said[on] = await both.page(OWNER, "/api/form", {"session": session, "key": key,
                                                            "action": "decline"})
        got[on] = await asyncio.to_thread(_hook_got, sock)
        await eventually(lambda m=after: "❌ Declined by" in _form_text(both, m), EDITED,
                         f"the form declined on the {on}, in the chat")
        assert (await _page_form(both, session, key)) is None
        _form_done(both, session, n)
    assert said["chat"] == said["page"] == "Declined.", said
    assert got["chat"]["elicitation"] == got["page"]["elicitation"] == {"action": "decline"}


async def test_a_form_answered_already_reads_the_same_on_either_surface(both, hook_reply):
    """A form answered (on the page), answered again from both surfaces: the same words."""
    path, sock = hook_reply
    session = await both.started("rel")
    key = _form_asked(both, session, path, 1)
    mid = await _form_message(both)
    buttons = _buttons_of(both.fake.message(GROUP, mid))
    await _page_shows_form(both, session, key)
    assert await both.page(OWNER, "/api/form", {"session": session, "key": key,
                                                "action": "cancel"}) == "Cancelled."
    page = await both.page(OWNER, "/api/form", {"session": session, "key": key,
                                                "action": "decline"})
    chat = await both.toast(OWNER, mid, buttons["❌ Decline"])
    assert page == chat, (page, chat)


# -- /resume (ResumeSession) ------------------------------------------------------------


@pytest.fixture
def fake_claude(both, tmp_path):
    """Claude Code, as the machine the sessions run on starts it in real dtach: a script
    that writes its folder and arguments to ``started`` and waits."""
    from aipager import dtach

    mark = tmp_path / "started"
    script = tmp_path / "claude"
    script.write_text(f'#!/bin/sh\necho "$PWD|$*" >> {mark}\nexec sleep 60\n')
    script.chmod(0o755)
    both.env["AIPAGER_CLAUDE_BIN"] = str(script)
    yield mark
    for info in dtach.list_sessions(both.env):
        dtach.kill(both.env, info.name)


async def test_resume_is_an_admins_and_resumes_alike_here_and_on_a_host(both, fake_claude,
                                                                         tmp_path):
    """The chat's own use case (the page offers no resume): an ended session, resumed from
    the chat, starts again in real dtach with its conversation (``--resume`` its Claude Code
    session id) in its folder, on the machine it ran on (a host's on the host, none on the
    hub), and the chat says the same whether that is here or a host; a member may neither
    ask for the picker nor tap the owner's, and nothing starts."""
    from aipager import dtach
    from aipager.port.model import State

    folder = tmp_path / "proj"
    folder.mkdir()
    session = await both.started("old", cwd=str(folder))
    both.sessions.live.discard(both.terminal(session))
    both.feed(session, "SessionEnd", reason="prompt_input_exit")
    await eventually(lambda: getattr(both.port.sessions.get(session), "state", None)
                     == State.GONE, what=f"{session} ended, as the chat sees it")

    refused = await _told(both, GUEST, "/resume", "🔒")
    assert refused == "🔒 Only an admin may do that here.", refused
    await _told(both, OWNER, "/resume", "Resume which session?")
    picker = next(m for m in reversed(both.fake.bot_messages(GROUP))
                  if "Resume which session?" in str(m.get("text")))
    buttons = _buttons_of(picker)
    label = both.port.sessions.get(session).label  # (a host's: bare while no other has it)
    assert list(buttons) == [label], buttons
    toast = await both.toast(GUEST, picker["message_id"], buttons[label])
    assert toast and toast in refused, (toast, refused)
    assert not fake_claude.exists() and dtach.list_sessions(both.env) == []
    start = len(both.fake.calls_of("sendMessage"))
    await both.toast(OWNER, picker["message_id"], buttons[label])
    said = await eventually(lambda: next(
        (str(p["text"]) for p in both.fake.calls_of("sendMessage")[start:]
         if "resumed" in str(p["text"])), None), what="the chat saying it resumed")
    assert said == f"↩️ {both.said('old')} resumed in {folder}.", said
    await eventually(lambda: fake_claude.exists() and fake_claude.read_text(), 10,
                     "Claude Code started again")
    (started,) = fake_claude.read_text().splitlines()
    cwd, _, args = started.partition("|")
    assert cwd == str(folder) and args.split()[:2] == ["--resume", "sid-old"], started
    assert [i.session for i in dtach.list_sessions(both.env)] == [both.terminal(session)]
    if both.host:  # started on the host, not on the hub
        assert dtach.list_sessions(both.port.local.env) == []


async def _page_upload(both: Surfaces, user: dict, session: str, name: str,
                       data: bytes) -> tuple[int, dict]:
    import aiohttp

    form = aiohttp.FormData()
    form.add_field("file", data, filename=name, content_type="application/octet-stream")
    response = await both.client.post(f"/api/sessions/{session}/files", data=form, headers={
        "Host": "127.0.0.1:7180", "Origin": "http://127.0.0.1:7180",
        "Authorization": f"tma {init_data(user, TOKEN)}"})
    return response.status, await response.json()


async def test_a_file_sent_for_a_prompt_is_kept_alike_and_a_readers_is_refused_alike(both):
    """``KeepFiles``: a document sent in the chat and the same file uploaded on the page
    land in the sender's own folder on the machine of the surface they used (a hub keeps
    them and sends them on with the prompt), audited; a reader's is refused in the same
    words and kept nowhere."""
    from aipager import files

    session = await both.started("jim")
    here = both.port.env  # the surfaces' machine
    status, page = await _page_upload(both, GUEST, session, "notes.txt", b"the notes")
    assert status == 200 and page["message"] == "📎 Kept for your message: " + \
        os.path.basename(page["paths"][0])
    folder = files.inbox_dir(here, GUEST["id"])
    # (in a group the bot takes what is addressed to it: the caption mentions it)
    await both.fake.user_sends_document(b"the notes", "notes.txt", "@aipager_test_bot read it", user=GUEST,
                                        chat_id=GROUP)
    kept = await eventually(lambda: sorted(os.listdir(folder)) if os.path.isdir(folder)
                            and len(os.listdir(folder)) == 2 else None, what="both kept")
    for name in kept:
        with open(os.path.join(folder, name), "rb") as fh:
            assert fh.read() == b"the notes"
    status, page = await _page_upload(both, READER, session, "a.txt", b"x")
    sent = await both.fake.user_sends_document(b"x", "a.txt", "@aipager_test_bot read it", user=READER,
                                               chat_id=GROUP)
    chat = await both.fake.wait_for(
        "sendMessage", lambda p: str((p.get("reply_parameters") or {}).get("message_id"))
        == str(sent["message_id"]))
    assert status == 409
    assert chat["text"] == "🔒 " + page["message"] == \
        "🔒 Your role may not send messages to Claude here."
    assert not os.path.exists(files.inbox_dir(here, READER["id"]))
