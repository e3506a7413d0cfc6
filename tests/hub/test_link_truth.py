"""A host's link tells the truth (issue 34): a frozen broker counts as lost once its pings
go unanswered, and a revoked host hears "revoked" and stops asking every second."""

from __future__ import annotations

import asyncio
import signal
import time

from bot.conftest import eventually
from hub.conftest import HUB_PW, PASSWORDS, hub_sees

from aipager.cli import doctor_cmd
from aipager.hub import conn, host, server, supervise


async def test_a_frozen_broker_is_a_lost_link_and_its_return_a_link_again(machines,
                                                                          monkeypatch):
    # pings every second, one unanswered allowed: the frozen broker shows in seconds here
    monkeypatch.setattr(conn, "PING_SECONDS", 1)
    monkeypatch.setattr(conn, "MAX_PINGS_OUT", 1)
    hub = machines.start_hub()
    box = machines.start_host("box")
    await eventually(lambda: hub.link.connected and box.link.connected, 10, "both connected")
    first = box.link.facts()["hub_link"]["since"]
    assert first is not None
    proc = machines.broker.proc
    proc.send_signal(signal.SIGSTOP)  # the socket stays open; nothing answers
    try:
        # within a few pings (conn.watch), not whenever nats-py's reconnect gets round to it
        await eventually(lambda: not box.link.connected and not hub.link.connected, 15,
                         "the frozen broker seen as lost")
        facts = box.link.facts()["hub_link"]
        assert facts["connected"] is False and facts["since"] >= first
        said = doctor_cmd.link_check(facts, machines.broker.url, time.time())
        assert not said.ok and said.detail.startswith("not connected since")
    finally:
        proc.send_signal(signal.SIGCONT)
    await eventually(lambda: hub.link.connected and box.link.connected, 30, "both back")
    box.start("jim")
    await hub_sees(hub, "claude-jim@box")


async def test_a_revoked_host_is_told_and_asks_again_only_rarely(machines, monkeypatch, caplog):
    monkeypatch.setattr(conn, "PING_SECONDS", 1)
    # the link's ordinary retries quick: a loaded machine may see a plain disconnect or two
    # before the broker's refusal, and the doubling wait would pass the test's minute
    monkeypatch.setattr(supervise.Backoff, "next", lambda self: 0.5)
    hub = machines.start_hub()
    box = machines.start_host("box")
    await eventually(lambda: hub.link.connected and box.link.connected, 10, "both connected")
    changes: list[dict] = []
    box.link.on_change = lambda: changes.append(box.link.facts()["hub_link"])

    # the hub revokes box: the server's users without it, reloaded (as `aipager hub revoke`)
    broker = machines.broker
    broker.conf.write_text(server.render_config(
        f"127.0.0.1:{broker.port}", str(broker.root / "store"), HUB_PW,
        {k: v for k, v in PASSWORDS.items() if k != "box"}))
    broker.proc.send_signal(signal.SIGHUP)

    await eventually(lambda: box.link.revoked, 60, "box told it was revoked")
    facts = box.link.facts()["hub_link"]
    assert facts["connected"] is False and facts["revoked"] is True
    assert facts["problem"].startswith("revoked")
    assert any("refused this host" in r.getMessage() for r in caplog.records)
    # doctor reads the same facts from the saved state
    said = doctor_cmd.link_check(facts, broker.url, time.time())
    assert not said.ok and said.detail.startswith("revoked") and "new invite" in said.fix
    refused = box.link.counters["refused"]
    # not asked again every second: the next try waits REFUSED_RETRY (ten minutes)
    assert host.REFUSED_RETRY >= 600
    await asyncio.sleep(3)
    assert box.link.counters["refused"] == refused == 1
    assert not box.link.connected
    assert hub.link.connected  # the others go on


async def test_a_credential_refused_at_the_first_connection_is_revoked_at_once(machines,
                                                                               monkeypatch):
    from hub.conftest import Host

    from aipager.hub.creds import Creds

    machines.start_hub()
    box = Host(machines.host_envs["box"], machines.broker.url, "box",
               creds=Creds("box", "not-the-password"))
    machines.hosts["box"] = box
    await eventually(lambda: box.link.revoked, 60, "box told it was refused")
    facts = box.link.facts()["hub_link"]
    assert facts["problem"].startswith("revoked") and facts["connected"] is False
    await asyncio.sleep(3)
    assert box.link.counters["refused"] == 1  # not asked again every second


def test_status_says_the_hosts_link(tmp_path, monkeypatch):
    """`aipager status` on a host prints its link from the saved state (revoked here)."""
    import os

    from typer.testing import CliRunner

    from aipager.cli import status_cmd
    from aipager.cli.app import app

    state = {"daemon": {"alive": True, "hub_link": {
        "host": "box", "url": "nats://hub:4222", "connected": False, "since": time.time(),
        "revoked": True, "problem": "revoked: the hub refused this host's credential (box)"}},
        "sessions": {}}
    monkeypatch.setattr(status_cmd, "daemon_pids", lambda env: [os.getpid()])
    monkeypatch.setattr(status_cmd, "load_state", lambda env: (state, None))
    result = CliRunner().invoke(app, ["status"])
    assert "hub: revoked: the hub refused this host's credential (box) since" in result.output
    assert "(as box)" in result.output


async def test_a_loop_whose_library_swallowed_the_cancel_is_still_stopped():
    """A teardown waited eight minutes on a link loop: nats-py can finish a ``wait_for`` as
    the cancel arrives and so swallow it, and the loop then ran on.  Stopping asks again
    until the task ends, and a loop that sees its cancel as a library error stops."""
    from aipager.aio import cancel_and_wait, stop_if_cancelled

    swallowed = []

    async def deaf() -> None:  # swallows the first cancel, as such a library does
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed.append(1)

    async def wrapped() -> None:  # the library turns the cancel into its own error
        while True:
            try:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError as exc:
                    raise TimeoutError from exc
            except TimeoutError:
                stop_if_cancelled()

    tasks = [asyncio.create_task(deaf()), asyncio.create_task(wrapped())]
    await asyncio.sleep(0)
    stopping = asyncio.ensure_future(cancel_and_wait(tasks))
    done, _ = await asyncio.wait({stopping}, timeout=8)  # (each sleep lasts 10 s)
    assert done == {stopping}, "a task that swallowed its cancel kept running"
    assert all(t.done() for t in tasks) and swallowed == [1]
