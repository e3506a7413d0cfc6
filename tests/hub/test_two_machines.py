"""A chat on the hub drives a session on another machine, through a real nats-server."""

from __future__ import annotations

import asyncio
import time

from bot.conftest import eventually
from fakes.telegram_api import OWNER
from hub.conftest import hub_sees
from support.screens import rows

from aipager.port.model import State
from tests.support.door import door


async def on_screen(machines, pred, timeout=10.0):
    """A bot message as the chat shows it now (edits applied) matching ``pred``."""
    def find():
        return next((m for m in machines.fake.bot_messages(OWNER["id"])
                     if pred(str(m.get("text", "")))), None)

    return await eventually(find, timeout, "a message on the phone")


def answers(hub, text):
    return [t for t in hub.sent_texts() if text in t]


async def test_a_prompt_runs_on_the_named_host_and_its_answer_comes_back_once(machines):
    hub = machines.start_hub()
    box = machines.start_host("box")
    session = box.start("jim")
    sess = await hub_sees(hub, "claude-jim@box")
    assert sess.label == "jim"  # alone: no host needed
    from aipager import __version__  # (the host names its version: the hub asks it)
    # (with its first snapshot, which may come after the session's first output)
    await eventually(lambda: hub.link.facts()["hub"]["hosts"]["box"]["version"] == __version__,
                     20, "box's version known")

    msg = await machines.fake.user_says("/jim fix the failing test")
    typed = await eventually(lambda: box.sessions.typed, 30, "the prompt typed on box")
    assert typed[0][:2] == (session, "fix the failing test")
    assert typed[0][2]["msg_id"] == msg["message_id"]
    assert typed[0][2]["author_user_id"] == OWNER["id"]
    assert hub.sessions.typed == []  # nothing typed on the hub machine

    box.feed(session, "queue_pickup", consumed=[{"msg_id": msg["message_id"],
                                                "chat_id": OWNER["id"],
                                                "author_user_id": OWNER["id"]}])
    box.feed(session, "UserPromptSubmit", prompt="fix the failing test", prompt_id="p1")
    box.feed(session, "PreToolUse", tool_name="Bash", tool_use_id="t1",
             tool_input={"command": "pytest -q"})
    await on_screen(machines, lambda t: "jim · working" in t and "pytest -q" in t)
    box.feed(session, "PostToolUse", tool_name="Bash", tool_use_id="t1",
             tool_input={"command": "pytest -q"}, tool_response={"stdout": "1 passed"})
    box.feed(session, "Stop", prompt_id="p1", last_assistant_message="Fixed: the test passes.")
    answer = await machines.fake.wait_for("sendMessage",
                                          lambda p: "the test passes" in str(p.get("text")))
    assert int(answer["reply_parameters"]["message_id"]) == msg["message_id"]
    await machines.fake.wait_for("setMessageReaction",
                                 lambda p: p["reaction"][0]["emoji"] == "👍")
    await eventually(lambda: hub.port.sessions.get("claude-jim@box").state == State.READY, 10)
    await eventually(lambda: hub.bot.outbox.idle(), 10, "outbox idle")
    assert len(answers(hub, "the test passes")) == 1


async def test_the_same_name_on_two_machines_is_name_at_host(machines):
    hub = machines.start_hub()
    box = machines.start_host("box")
    vm = machines.start_host("vm")
    box.start("api")
    vm.start("api")
    await hub_sees(hub, "claude-api@box")
    await hub_sees(hub, "claude-api@vm")
    # (each label as the hub shows it once both are known: alone, box's was just "api")
    a, b = hub.port.sessions.get("claude-api@box"), hub.port.sessions.get("claude-api@vm")
    assert {a.label, b.label} == {"api@box", "api@vm"}
    from aipager.bot.actions import Actions

    actions = Actions(door(hub.port), hub.bot.state, hub.bot.outbox)
    assert actions.find("api@vm").name == "claude-api@vm"
    assert actions.find("api@box").name == "claude-api@box"
    assert actions.find("api") is None  # ambiguous: the chat asks

    # a prompt typed at vm's terminal shows in the chat; a reply to it goes to vm
    vm.feed("claude-api", "UserPromptSubmit", prompt="look at the logs", prompt_id="p0")
    shown = await machines.fake.wait_for("sendMessage",
                                         lambda p: "look at the logs" in str(p.get("text")))
    msgs = machines.fake.bot_messages(OWNER["id"])
    shown_id = next(m["message_id"] for m in msgs if m.get("text") == shown["text"])
    vm.feed("claude-api", "Stop", prompt_id="p0", last_assistant_message="Logs are clean.")
    await machines.fake.wait_for("sendMessage", lambda p: "Logs are clean" in str(p.get("text")))
    await machines.fake.user_says("run the migrations", reply_to=shown_id)
    typed = await eventually(lambda: vm.sessions.typed, 30, "typed on vm")
    assert typed[0][:2] == ("claude-api", "run the migrations")
    assert box.sessions.typed == []


async def test_a_tap_answers_the_hosts_own_hook(machines):
    hub = machines.start_hub()
    box = machines.start_host("box")
    session = box.start("jim")
    await hub_sees(hub, "claude-jim@box")
    box.feed(session, "UserPromptSubmit", prompt="go", prompt_id="p1")
    # no hook waits (no reply address): the host's daemon answers the dialog with keys
    box.feed(session, "PermissionRequest", tool_name="Bash", tool_use_id="t9",
             tool_input={"command": "make deploy"})
    box.sessions.screens[session] = rows("permission_bash")  # its dialog, on box's screen
    req = await machines.fake.wait_for("sendMessage", lambda p: "make deploy" in str(p.get("text")))
    buttons = [b for row in req["reply_markup"]["inline_keyboard"] for b in row]
    allow = next(b for b in buttons if "Allow" in b["text"])
    await machines.fake.user_taps(req_id(req, machines), allow["callback_data"])
    keys = await eventually(lambda: box.sessions.keys, 30, "keys pressed on box")
    assert keys[0][0] == session
    edited = await machines.fake.wait_for("editMessageText",
                                          lambda p: "make deploy" in str(p.get("text")))
    assert "Allowed" in edited["text"] or "✅" in edited["text"]


def req_id(params, machines):
    msgs = machines.fake.bot_messages(OWNER["id"])
    return next(m["message_id"] for m in msgs if m.get("text") == params["text"])


async def test_a_host_offline_is_said_at_once(machines):
    hub = machines.start_hub()
    box = machines.start_host("box")
    box.start("jim")
    await hub_sees(hub, "claude-jim@box")
    await box.stop()
    # the hub still knows the session; the host stops sending its heartbeat (kept a minute
    # back: a last record of box's, published before its stop, may still reach the hub)
    h = hub.link.view.hosts["box"]

    async def silent() -> None:
        while True:
            h.last_seen = min(h.last_seen, time.time() - 60)
            await asyncio.sleep(0.1)

    keeper = asyncio.ensure_future(silent())
    try:
        await asyncio.sleep(0.2)
        msg = await machines.fake.user_says("/jim hello")
        reply = await machines.fake.wait_for("sendMessage",
                                             lambda p: "Not delivered" in str(p.get("text")))
    finally:
        keeper.cancel()
    assert "box is offline since" in reply["text"]
    assert int(reply["reply_parameters"]["message_id"]) == msg["message_id"]


async def test_the_owner_is_told_once_when_a_host_goes_offline_and_when_it_is_back(machines):
    hub = machines.start_hub()
    box = machines.start_host("box")
    box.start("jim")
    await hub_sees(hub, "claude-jim@box")
    # the hub has had a snapshot of box and knows it online (a session can reach the hub
    # with an output before any snapshot does)
    await eventually(lambda: hub.link._online.get("box") is True, 20, "box known online")
    await box.stop()

    async def silent_for_a_minute() -> None:
        # its heartbeats stopped a minute ago, and stay so: a last record of box's may
        # still reach the hub after its stop, on a loaded machine
        while True:
            h = hub.link.view.hosts["box"]
            h.last_seen = min(h.last_seen, time.time() - 60)
            await asyncio.sleep(0.2)

    keeper = asyncio.ensure_future(silent_for_a_minute())
    try:
        gone = await machines.fake.wait_for(
            "sendMessage", lambda p: "📴 box is offline" in str(p.get("text")), 30)
    finally:
        keeper.cancel()
    assert "its sessions cannot be reached" in gone["text"]
    assert str(gone.get("disable_notification", "")).lower() not in ("true", "1")  # it buzzes
    await machines.fake.user_says("/status")
    shown = await machines.fake.wait_for("sendMessage",
                                         lambda p: "Sessions:" in str(p.get("text")), 10)
    assert "❔ jim · unreachable" in shown["text"]
    await asyncio.sleep(2 * 2.5)  # the hub looks again: said once, not at every look
    assert len([t for t in hub.sent_texts() if "📴 box is offline" in t]) == 1

    box = machines.start_host("box")  # it comes back
    await machines.fake.wait_for("sendMessage",
                                 lambda p: "🖥 box is back online" in str(p.get("text")), 20)


async def test_new_name_at_host_starts_the_session_there_and_kill_ends_it(machines, tmp_path):
    import stat

    from aipager import dtach
    from aipager.proto import paths

    hub = machines.start_hub()
    box = machines.start_host("box")
    mark = tmp_path / "started"
    script = tmp_path / "claude"
    script.write_text(f'#!/bin/sh\necho "$PWD|$*" >> {mark}\nexec sleep 60\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    box.daemon.env["AIPAGER_CLAUDE_BIN"] = str(script)
    box.sessions.live.add("claude-web")  # typing goes to box's fake terminal
    await eventually(lambda: "box" in hub.link.view.hosts and hub.link.view.hosts["box"].online(),
                     10, "box online")
    try:
        await machines.fake.user_says("/new web@box write the readme")
        await machines.fake.wait_for("sendMessage",
                                     lambda p: "web@box started" in str(p.get("text")))
        await eventually(lambda: mark.exists() and mark.read_text(), 10, "claude started on box")
        # (no folder named: box's own default, decided on box; a folder box lacks means
        # box's default too: test_codec.py)
        assert mark.read_text().strip() == f"{box.env['HOME']}|--teammate-mode in-process"
        assert dtach.is_live(paths.dtach_socket(box.env, "web"))
        assert not dtach.list_sessions(machines.hub_env)
        box.feed("claude-web", "SessionStart", source="startup", session_id="sid-web",
                 cwd=box.env["HOME"])
        typed = await eventually(lambda: box.sessions.typed, 15, "the first message on box")
        assert typed[0][:2] == ("claude-web", "write the readme")

        await machines.fake.user_says("/kill web")
        ask = await on_screen(machines, lambda t: t.startswith("End session web"))
        yes = next(b for row in ask["reply_markup"]["inline_keyboard"] for b in row
                   if "Yes" in b["text"])
        await machines.fake.user_taps(ask["message_id"], yes["callback_data"])
        await eventually(lambda: not dtach.is_live(paths.dtach_socket(box.env, "web")), 10,
                         "web ended on box")
    finally:
        for info in dtach.list_sessions(box.env):
            dtach.kill(box.env, info.name)


async def test_diff_of_a_hosts_session_is_read_on_that_host(machines, tmp_path):
    import subprocess

    proj = tmp_path / "box-proj"
    proj.mkdir()
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=proj, check=True)
    (proj / "main.go").write_text("package one\n")
    subprocess.run([*git, "add", "."], cwd=proj, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], cwd=proj, check=True)
    (proj / "main.go").write_text("package two\n")
    hub = machines.start_hub()
    box = machines.start_host("box")
    box.sessions.live.add("claude-jim")
    box.feed("claude-jim", "SessionStart", source="startup", session_id="sid-jim",
             cwd=str(proj), transcript_path="/nonexistent/jim.jsonl")
    await hub_sees(hub, "claude-jim@box")
    await machines.fake.user_says("/diff jim")
    said = await machines.fake.wait_for("sendMessage", lambda p: "📝 jim" in str(p["text"]))
    assert said["text"].startswith("📝 jim@box: changed since the last commit (files: 1)")
    assert "-package one\n+package two" in said["text"]


async def test_in_private_mode_a_hosts_content_never_reaches_telegram(machines):
    """Private mode on the hub: a host's answer, command, path and typed prompt travel to the
    hub over the broker, and the hub's chat carries only names, states and buttons."""
    from aipager import config

    cfg = config.load(machines.hub_env)
    config.save(machines.hub_env, config.Config(bot_token=cfg.bot_token, chat_id=cfg.chat_id,
                                                extra={**cfg.extra, "private": True}))
    hub = machines.start_hub()
    box = machines.start_host("box")
    box.sessions.live.add("claude-jim")
    box.feed("claude-jim", "SessionStart", source="startup", session_id="sid-jim",
             cwd="/srv/CANARYPATH", transcript_path="/nonexistent/jim.jsonl")
    await hub_sees(hub, "claude-jim@box")
    box.feed("claude-jim", "UserPromptSubmit", prompt="CANARYPROMPT typed at the computer",
             prompt_id="p1")
    box.feed("claude-jim", "PreToolUse", tool_name="Bash", tool_use_id="t1",
             tool_input={"command": "echo CANARYCOMMAND"})
    box.feed("claude-jim", "PostToolUse", tool_name="Bash", tool_use_id="t1",
             tool_input={"command": "echo CANARYCOMMAND"}, tool_response={"stdout": "CANARYOUT"})
    box.feed("claude-jim", "Stop", prompt_id="p1", last_assistant_message="CANARYANSWER done.")
    # the chat hears the task ended (a bell naming the session), and nothing of its content
    await machines.fake.wait_for("sendMessage", lambda p: "jim" in str(p.get("text"))
                                 and "✅" in str(p.get("text")), timeout=15)
    await eventually(lambda: hub.bot.outbox.idle(), 10, "outbox idle")
    assert "CANARY" not in machines.fake.everything_received()
    # the hub's own view holds the answer: the page would show it
    assert hub.port.sessions.get("claude-jim@box").task is not None


async def test_a_replayed_or_old_command_is_refused_by_a_host_that_knows_the_hubs_key(machines):
    """Commands the hub signs (``hub.signing``): a host holding the hub's public key runs one
    once, while fresh; the same command sent again under a new broker message id, or one
    made twenty minutes ago, is refused and counted."""
    import time

    from aipager.hub import commands, signing
    from aipager.hub.creds import Creds
    from aipager.port.commands import SendPrompt
    from aipager.port.who import Person
    from hub.conftest import PASSWORDS, Host

    hub = machines.start_hub()
    key = signing.public_key(signing.hub_seed(machines.hub_env))
    box = Host(machines.host_envs["box"], machines.broker.url, "box",
               creds=Creds("box", PASSWORDS["box"], hub_key=key))
    machines.hosts["box"] = box
    session = box.start("jim")
    await hub_sees(hub, "claude-jim@box")
    # a command as the hub makes it, the way the hub's own sender publishes it
    owner = Person(OWNER["id"], "@owner", "owner", never_held=True)
    cmd = commands.Ask(SendPrompt(owner, "claude-jim", "replay me", msg_id=77,
                                  chat_id=OWNER["id"]))
    cmd_id = hub.link._send("box", cmd, 10.0)  # the real path: signed with the hub's key
    await eventually(lambda: [t for t in box.sessions.typed if t[1] == "replay me"], 10,
                     "typed once")
    # the same signed command again, as a replay with a new message id
    seed = signing.hub_seed(machines.hub_env)
    first = signing.sign(seed, "box", {"id": cmd_id, "ttl": 10.0, "made": time.time(),
                                        "cmd": commands.command_to_json(cmd)})
    hub.link._queue.put_nowait(("box", first, cmd_id + "-again", time.monotonic() + 10))
    hub.link._queue.put_nowait(("box", first, cmd_id + "-again2", time.monotonic() + 10))
    old = signing.sign(seed, "box", {"id": "hub:old:1", "ttl": 10.0,
                                      "made": time.time() - 1200,
                                      "cmd": commands.command_to_json(cmd)})
    hub.link._queue.put_nowait(("box", old, "hub:old:1", time.monotonic() + 10))
    forged = {**first, "id": "hub:forged:1"}  # its signature no longer matches
    hub.link._queue.put_nowait(("box", forged, "hub:forged:1", time.monotonic() + 10))
    await eventually(lambda: box.link.counters["commands_replayed"] >= 1
                     and box.link.counters["commands_refused"] >= 2, 10, "refused")
    await asyncio.sleep(0.5)
    assert len([t for t in box.sessions.typed if t[1] == "replay me"]) == 1
    assert session == "claude-jim"
    # the host's doctor says so (from the facts its daemon saves), though the link works
    from aipager.cli import doctor_cmd

    said = doctor_cmd.link_check(box.link.facts()["hub_link"], "nats://hub", time.time())
    assert not said.ok and "refused" in said.detail and "sent again" in said.detail, said
    assert "none of them ran" in said.fix
    # and the hub's owner sees it in `aipager hub hosts` (the host's next snapshot says it)
    from aipager.cli import hub_cmd

    await eventually(lambda: hub.link.facts()["hub"]["hosts"]["box"]["refused"] >= 3, 20,
                     "the count at the hub")
    row = {**hub.link.facts()["hub"]["hosts"]["box"], "version": ""}
    told = hub_cmd._host_state(row, True)
    assert told.startswith("online · refused ") and "only the hub's login" in told, told
