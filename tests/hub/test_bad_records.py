"""The hub survives any record: what a joined host publishes on its own subject with its
own credential (garbage, the wrong shape, too big, another host's session) is acked,
set aside and told once; every other record, the same host's later ones included, goes
on in order; a failing link starts again and says so; ``connected`` tells the truth.
All through the real broker."""

from __future__ import annotations

import asyncio

import nats
from bot.conftest import eventually
from hub.conftest import PASSWORDS, hub_sees

from aipager.port.outputs import NoticeName
from aipager.hub import codec, deadletter, layout, link, names

BAD_WORDS = "sent a record the hub cannot read"


def texts(machines):
    return [str(p.get("text", "")) for p in machines.fake.calls_of("sendMessage")]


def say(host, session, text):
    """The host's daemon says a notice in ``session`` (it goes to the hub through its link)."""
    sess = host.daemon.core.registry.get(session)
    host.daemon.core.ctx.notice(sess, NoticeName.API_ERROR, text)


async def shown(machines, text, timeout=15.0):
    await machines.fake.wait_for("sendMessage", lambda p: p.get("text") == text, timeout=timeout)


async def published(host):
    await eventually(lambda: not host.link.log.pending, 10, f"{host.name}'s outbox sent")


async def as_box(broker):
    """Box's own credential, used by hand: what a compromised or broken host can send."""
    return await nats.connect(broker.url, user="box", password=PASSWORDS["box"],
                              inbox_prefix=names.inbox_prefix("box"), max_reconnect_attempts=0)


def bad_records():
    """What box publishes on its own ``aipager.box.out``: none of it is an output."""
    forged = {"kind": "notice", "session": "claude-web@vm", "text": "forged by box",
              "notice": "api_error"}
    forged_sess = {"name": "claude-web@vm", "label": "web@vm", "registered_at": 1.0}
    return [
        b"\xff\x00 garbage, not JSON",
        codec.dumps({"type": "output", "epoch": "x", "seq": 1,
                     "out": {"kind": "notice", "session": "claude-jim", "text": ["a", "list"]}}),
        codec.dumps({"type": "output", "epoch": "x", "seq": 2,
                     "out": {"kind": "notice", "session": "claude-jim", "notice": "api_error",
                             "text": "x" * (codec.MAX_RECORD + 1000)}}),
        codec.dumps({"type": "output", "epoch": "x", "seq": 3, "out": forged}),
        codec.dumps({"type": "output", "epoch": "x", "seq": 4, "sess": forged_sess,
                     "out": {**forged, "session": "claude-jim"}}),
        # (this one raised past the old hub's reading and stopped its link for every host)
        codec.dumps({"type": "output", "epoch": "x", "seq": 5,
                     "sess": {"name": "claude-jim", "label": "jim", "registered_at": 1.0,
                              "task": 5},
                     "out": {"kind": "notice", "session": "claude-jim", "text": "a task of 5"}}),
    ]


async def test_a_hosts_bad_records_are_set_aside_told_once_and_nothing_else_stops(machines):
    hub = machines.start_hub()
    box, vm = machines.start_host("box"), machines.start_host("vm")
    jim, web = box.start("jim"), vm.start("web")
    await hub_sees(hub, "claude-jim@box")
    await hub_sees(hub, "claude-web@vm")

    say(box, jim, "box before")
    await published(box)
    raw = await as_box(machines.broker)
    js = raw.jetstream(timeout=5)
    for i, data in enumerate(bad_records()):
        await js.publish(names.out_subject("box"), data, headers={"Nats-Msg-Id": f"bad:{i}"})
        say(vm, web, f"vm {i}")  # another host talks meanwhile
    n = len(bad_records())
    await raw.close()
    say(box, jim, "box after 1")
    say(box, jim, "box after 2")

    await shown(machines, "box after 2")
    await shown(machines, f"vm {n - 1}")
    said = texts(machines)
    assert [t for t in said if t.startswith("box ")] == ["box before", "box after 1", "box after 2"]
    assert [t for t in said if t.startswith("vm ")] == [f"vm {i}" for i in range(n)]
    told = [t for t in said if BAD_WORDS in t]
    assert len(told) == 1 and told[0].startswith("⚠️ box ")  # once, naming the host
    assert not any("forged" in t for t in said)
    assert all(s.name.count("@") <= 1 for s in hub.port.sessions)

    letters = deadletter.read(layout.dead_letters(hub.env))
    assert [(d["host"], d["subject"]) for d in letters] == [("box", "aipager.box.out")] * n
    seqs = [d["seq"] for d in letters]
    assert seqs == sorted(seqs) and seqs[0] > 0
    assert "not JSON" in letters[0]["reason"] and "bytes, over" in letters[2]["reason"]
    assert "not a session name" in letters[3]["reason"]
    assert "not a session name" in letters[4]["reason"]
    assert "does not fit" in letters[5]["reason"]
    assert not any("task of 5" in t for t in said)
    assert hub.link.counters["unreadable"] == n

    # every record acknowledged: nothing left for the broker to give again
    async def all_acked():
        for host in ("box", "vm"):
            info = await hub.link._nc.jetstream().consumer_info(names.OUT_STREAM,
                                                                names.out_consumer(host))
            if info.num_ack_pending or info.num_pending:
                return False
        return True

    for _ in range(100):
        if await all_acked():
            break
        await asyncio.sleep(0.1)
    assert await all_acked()

    # the hub restarts: the bad records are not seen again (nor told again)
    await hub.stop()
    hub = machines.start_hub()
    await eventually(lambda: hub.link.connected, 10, "the hub's link up again")
    say(box, jim, "box after the hub's restart")
    await shown(machines, "box after the hub's restart")
    await asyncio.sleep(0.5)
    assert len(deadletter.read(layout.dead_letters(hub.env))) == n
    assert sum(BAD_WORDS in t for t in texts(machines)) == 1


async def test_a_failing_link_starts_again_and_says_so_once(machines, monkeypatch):
    monkeypatch.setattr(link, "HOSTS_SECONDS", 0.1)
    hub = machines.start_hub(stable=1.0)
    box = machines.start_host("box")
    jim = box.start("jim")
    await hub_sees(hub, "claude-jim@box")
    assert hub.link.connected and hub.link.facts()["hub"]["connected"]

    # the list of invited hosts cannot be read while the link runs (a broken hub.json):
    # the loop that reads it raises, the whole link goes down and starts again
    hosts, failures, broken = hub.link._hosts, [], [True]
    calls = iter(range(10**6))

    def hosts_now():
        if broken[0] and next(calls) % 2:  # the setup reads it fine, the watch does not
            failures.append(1)
            msg = "hub.json: unreadable"
            raise OSError(msg)
        return hosts()

    hub.link._hosts = hosts_now
    await eventually(lambda: not hub.link.connected, 5, "connected false after the failure")
    assert hub.link.facts()["hub"]["connected"] is False
    await eventually(lambda: len(failures) >= 3, 15, "the link started again, failing again")

    lost = [t for t in texts(machines) if "link to its hosts failed" in t]
    assert len(lost) == 1 and "hub.json: unreadable" in lost[0]  # said once, not per retry
    assert not any("is back" in t for t in texts(machines))  # never up for long

    broken[0] = False
    await eventually(lambda: hub.link.connected, 70, "connected again")
    await machines.fake.wait_for("sendMessage", lambda p: "link to its hosts is back"
                                 in str(p.get("text")), timeout=10)
    say(box, jim, "after the restarts")
    await shown(machines, "after the restarts")
    assert sum("is back" in t for t in texts(machines)) == 1


async def test_connected_is_true_only_while_the_broker_is_there(machines):
    hub = machines.start_hub()
    box = machines.start_host("box")
    await eventually(lambda: hub.link.connected and box.link.connected, 10, "both connected")
    assert box.link.facts()["hub_link"]["connected"]

    machines.broker.kill()
    await eventually(lambda: not hub.link.connected and not box.link.connected, 10,
                     "both see the broker gone")
    assert box.link.facts()["hub_link"]["connected"] is False
    assert hub.link.facts()["hub"]["connected"] is False

    machines.broker.start()
    await eventually(lambda: hub.link.connected and box.link.connected, 15, "both back")
    jim = box.start("jim")
    await hub_sees(hub, "claude-jim@box")
    say(box, jim, "through again")
    await shown(machines, "through again")
