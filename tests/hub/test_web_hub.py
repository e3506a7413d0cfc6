"""The hub's web page shows and drives every host's sessions through the hub's port: real
HTTP against the page as the hub serves it, two hosts joined through a real nats-server."""

from __future__ import annotations

import os

import aiohttp
from bot.conftest import eventually
from hub.conftest import hub_sees

from aipager import config, main
from aipager.port.outputs import FanoutNotifier
from aipager.web.live import WebNotifier


async def signed_in(hub) -> tuple[aiohttp.ClientSession, str]:
    """A browser that followed the hub's printed sign-in link (its cookie kept)."""
    link = await eventually(lambda: hub.signin and hub.signin[0], 10, "the page's sign-in link")
    base = link.split("?", 1)[0].rstrip("/")
    client = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    async with client.get(link, allow_redirects=False) as response:
        assert response.status == 303, await response.text()
    return client, base


async def test_the_page_lists_every_hosts_sessions_and_types_on_the_right_one(machines):
    hub = machines.start_hub(web=True)
    box = machines.start_host("box")
    vm = machines.start_host("vm")
    box.start("api")
    vm.start("api")
    vm.start("docs")
    hub.sessions.live.add("claude-local")
    hub.daemon.deliver([b'{"hook_event_name": "SessionStart", "session": "claude-local", '
                        b'"source": "startup", "session_id": "sid-local", "cwd": "/tmp"}'])
    for name in ("claude-api@box", "claude-api@vm", "claude-docs@vm"):
        await hub_sees(hub, name)

    client, base = await signed_in(hub)
    origin = {"Origin": base}
    try:
        async with client.get(f"{base}/api/sessions") as response:
            assert response.status == 200
            listed = await response.json()
        rows = listed["sessions"] if isinstance(listed, dict) else listed
        labels = {row["name"]: row["label"] for row in rows}
        assert labels == {"claude-local": "local", "claude-api@box": "api@box",
                          "claude-api@vm": "api@vm", "claude-docs@vm": "docs"}

        async with client.post(f"{base}/api/sessions/claude-api@vm/prompt", headers=origin,
                               json={"text": "run the migrations"}) as response:
            assert response.status == 200, await response.text()
            assert (await response.json())["ok"] is True
        typed = await eventually(lambda: vm.sessions.typed, 30, "typed on vm")
        assert typed[0][:2] == ("claude-api", "run the migrations")
        assert box.sessions.typed == [] and hub.sessions.typed == []

        # what the host's session says comes back to the page (the hub's outputs fan out)
        vm.feed("claude-api", "UserPromptSubmit", prompt="run the migrations", prompt_id="p1")
        vm.feed("claude-api", "Stop", prompt_id="p1", last_assistant_message="Migrated.")

        async def answered():
            async with client.get(f"{base}/api/sessions/claude-api@vm") as response:
                doc = await response.json()
            return any("Migrated." in str(entry) for entry in doc["conversation"])

        async def poll():
            import asyncio

            for _ in range(100):
                if await answered():
                    return True
                await asyncio.sleep(0.1)
            return False

        assert await poll(), "the host's answer never reached the page"
        # and a host that went quiet: the prompt is refused as not delivered, said so
        await vm.stop()
        hub.link.view.hosts["vm"].last_seen -= 60
        async with client.post(f"{base}/api/sessions/claude-docs@vm/prompt", headers=origin,
                               json={"text": "hello"}) as response:
            doc = await response.json()
        assert doc["ok"] is False and "Not delivered" in doc.get("message", str(doc))
    finally:
        await client.close()


def _targets(daemon) -> list:
    """The clients' notifiers behind the daemon's own (as tests/web/test_compose.py reads)."""
    last = daemon.notifier._targets[-1]
    return list(last._targets) if isinstance(last, FanoutNotifier) else [last]


def test_compose_hub_gives_the_chat_and_the_page_every_output(tmp_path):
    from fakes.telegram_api import OWNER, TOKEN
    from hub.conftest import free_port, instance

    env = instance(tmp_path, "hub")
    config.save(env, config.Config(bot_token=TOKEN, chat_id=OWNER["id"], extra={
        "hub": {"name": "laptop", "listen": f"127.0.0.1:{free_port()}"}}))
    cleanup: list = []
    try:
        daemon = main.compose_hub(env, config.load(env), cleanup)
        kinds = [type(t).__name__ for t in _targets(daemon)]
        assert kinds == ["ChatNotifier", WebNotifier.__name__]
        # the hosts' outputs (the hub's link) go to both as well
        link = next(s.__self__ for s in daemon._services if getattr(s, "__name__", "") == "run"
                    and type(getattr(s, "__self__", None)).__name__ == "HubLink")
        assert [type(t).__name__ for t in link.notifier._targets] == kinds
        # the first hub's server stopped before the second listens on its port (while it
        # ran, the second server's start raced its failing bind)
        while cleanup:
            cleanup.pop()()
        off = main.compose_hub(env, config.load(env), cleanup, web=False)
        assert [type(t).__name__ for t in _targets(off)] == ["ChatNotifier"]
    finally:
        for step in reversed(cleanup):
            step()
    assert os.path.exists(env["HOME"])


async def test_the_page_shows_a_quiet_hosts_sessions_unreachable(machines):
    """A host whose heartbeats stopped: the hub's page shows its sessions as unreachable
    (their state is only what the host last said), as /status does; a host still heard
    from shows its own."""
    import asyncio
    import time

    hub = machines.start_hub(web=True)
    box = machines.start_host("box")
    vm = machines.start_host("vm")
    box.start("api")
    vm.start("docs")
    for name in ("claude-api@box", "claude-docs@vm"):
        await hub_sees(hub, name)
    await eventually(lambda: all(hub.link._online.get(h) for h in ("box", "vm")), 20,
                     "both known online")
    await box.stop()

    async def box_silent() -> None:  # its heartbeats stopped a minute ago
        while True:
            h = hub.link.view.hosts["box"]
            h.last_seen = min(h.last_seen, time.time() - 60)
            await asyncio.sleep(0.2)

    keeper = asyncio.ensure_future(box_silent())
    client, base = await signed_in(hub)
    try:
        async def rows() -> dict:
            async with client.get(f"{base}/api/sessions") as response:
                listed = await response.json()
            return {r["name"]: r for r in (listed["sessions"] if isinstance(listed, dict)
                                          else listed)}

        deadline = time.monotonic() + 20
        while not (await rows())["claude-api@box"]["unreachable"]:
            assert time.monotonic() < deadline, "box's session never shown unreachable"
            await asyncio.sleep(0.2)
        assert (await rows())["claude-docs@vm"]["unreachable"] is False
    finally:
        keeper.cancel()
        await client.close()
