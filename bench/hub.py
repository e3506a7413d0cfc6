"""A host's output reaching the hub's chat, against the same output on a single machine.

``python -m bench --only hub``.  Two daemons in throwaway instance folders in this process
and the ``nats-server`` of the ``aipager[hub]`` extra on loopback, configured as the hub
writes it: the host's ``Daemon`` with its ``HostLink`` as notifier, the hub's ``HubLink``
handing outputs to a recording notifier (where the chat's ``ChatNotifier`` would queue them
for Telegram; Telegram itself is not part of the figure).

- **output → chat, single machine**: a notice a handler emits, to the chat's notifier of
  the same daemon (a direct call: the floor).
- **output → chat, through the hub**: the same notice emitted on the host, until the hub's
  notifier has it: the host's durable log, a JetStream publish with its acknowledgement,
  the hub's fetch, its bookkeeping (``taken.json``) [p50 ≤ 20 ms on loopback].
- **outputs per second through one hub**: 2000 notices emitted at once on the host, until
  the last reaches the hub's notifier.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from tests.support.door import door

GROUP = "hub"
BURST = 2000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _instance(root: str, name: str) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME",
                "XDG_RUNTIME_DIR", "AIPAGER_INSTANCE_DIR"):
        path = os.path.join(root, name, var.lower())
        os.makedirs(path, exist_ok=True)
        env[var] = path
    return env


class Arrivals:
    """The hub's notifier: when each notice arrived, by its text."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.event = asyncio.Event()

    def emit(self, out) -> None:
        self.at[out.text] = time.perf_counter()
        self.event.set()


async def _measure(args, root: str, url: str) -> list[dict]:
    from aipager.daemon.app import Daemon
    from aipager.port.outputs import Notice, NoticeName
    from aipager.hub.creds import Creds
    from aipager.hub.host import HostLink
    from aipager.hub.link import HubLink

    rows = []
    # single machine: the daemon's own notifier chain (log, recorder, the chat's notifier)
    chat = Arrivals()
    single = Daemon(_instance(root, "single"), notifier=chat)
    samples = []
    for i in range(args.warmup + args.rounds):
        t0 = time.perf_counter()
        single.notifier.emit(Notice("claude-b", f"single {i}", notice=NoticeName.API_ERROR))
        if i >= args.warmup:
            samples.append((chat.at[f"single {i}"] - t0) * 1000)
    rows.append(_row("output → chat, single machine", samples))

    hub_chat = Arrivals()
    hub = HubLink(_instance(root, "hub"), url, Creds("hub", "hub-pw"), hub_chat,
                  hosts=lambda: ["box"])
    host_env = _instance(root, "box")
    link = HostLink(host_env, url, Creds("box", "box-pw"))
    host = Daemon(host_env, notifier=link)
    link.attach(door(host))
    tasks = [asyncio.create_task(hub.run()), asyncio.create_task(link.run())]
    try:
        while not (hub.connected and link.connected and "box" in hub.view.hosts):
            await asyncio.sleep(0.05)
        samples = []
        for i in range(args.warmup + args.rounds):
            text = f"hub {i}"
            t0 = time.perf_counter()
            host.notifier.emit(Notice("claude-b", text, notice=NoticeName.API_ERROR))
            while text not in hub_chat.at:
                hub_chat.event.clear()
                await asyncio.wait_for(hub_chat.event.wait(), 10)
            if i >= args.warmup:
                samples.append((hub_chat.at[text] - t0) * 1000)
        rows.append(_row("output → chat, through the hub", samples, target=20.0))

        t0 = time.perf_counter()
        for i in range(BURST):
            host.notifier.emit(Notice("claude-b", f"burst {i}", notice=NoticeName.API_ERROR))
        last = f"burst {BURST - 1}"
        while last not in hub_chat.at:
            hub_chat.event.clear()
            await asyncio.wait_for(hub_chat.event.wait(), 60)
        took = hub_chat.at[last] - t0
        got = sum(1 for k in hub_chat.at if k.startswith("burst "))
        rows.append({"group": GROUP, "case": "outputs per second through one hub",
                     "outputs": BURST, "delivered": got, "seconds": round(took, 3),
                     "per_second": round(BURST / took)})
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return rows


def _row(case: str, samples: list[float], target: float | None = None) -> dict:
    samples.sort()
    row = {"group": GROUP, "case": case, "contender": "aipager", "runs": len(samples),
           "p50_ms": statistics.median(samples),
           "p95_ms": samples[min(len(samples) - 1, int(len(samples) * 0.95))]}
    if target is not None:
        row["target_p50_ms"] = target
    return row


def run(args) -> list[dict]:
    from aipager.hub import server

    root = tempfile.mkdtemp(prefix="aphub-")
    port = _free_port()
    conf = os.path.join(root, "nats.conf")
    with open(conf, "w") as fh:
        fh.write(server.render_config(f"127.0.0.1:{port}", os.path.join(root, "store"),
                                      "hub-pw", {"box": "box-pw"}))
    log = open(os.path.join(root, "nats.log"), "wb")  # noqa: SIM115
    proc = subprocess.Popen([server.find_binary(os.environ), "-c", conf], stdout=log,
                            stderr=log)
    try:
        if not server.wait_listening("127.0.0.1", port, 10):
            raise RuntimeError("nats-server did not start")
        return asyncio.run(_measure(args, root, f"nats://127.0.0.1:{port}"))
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
        shutil.rmtree(root, ignore_errors=True)
