"""Restarts lose nothing and show nothing twice: the broker killed mid-task, a host
restarted while the hub (and its broker) is down, the hub restarted."""

from __future__ import annotations

import asyncio

from bot.conftest import eventually
from fakes.telegram_api import OWNER
from hub.conftest import HUB_PW, hub_sees

from aipager.port.outputs import NoticeName
from aipager.hub import names
from aipager.hub.conn import connect
from aipager.hub.creds import Creds


def texts(machines):
    return [str(p.get("text", "")) for p in machines.fake.calls_of("sendMessage")]


def count(machines, needle):
    return sum(needle in t for t in texts(machines))


async def settle(hub):
    await eventually(lambda: hub.bot.outbox.idle(), 10, "the chat's outbox idle")


async def test_the_broker_killed_mid_task_loses_nothing_and_doubles_nothing(machines):
    hub = machines.start_hub()
    box = machines.start_host("box")
    session = box.start("jim")
    await hub_sees(hub, "claude-jim@box")
    msg = await machines.fake.user_says("/jim build it")
    await eventually(lambda: box.sessions.typed, 30, "typed on box")
    box.feed(session, "queue_pickup", consumed=[{"msg_id": msg["message_id"],
                                                "chat_id": OWNER["id"],
                                                "author_user_id": OWNER["id"]}])
    box.feed(session, "UserPromptSubmit", prompt="build it", prompt_id="p1")
    await machines.fake.wait_for("setMessageReaction", lambda p: p["reaction"][0]["emoji"] == "👍")

    machines.broker.kill()
    # the task goes on while the broker is away: three notices and the answer
    sess = box.daemon.core.registry.get(session)
    for i in range(3):
        box.daemon.core.ctx.notice(sess, NoticeName.API_ERROR, f"hiccup {i}")
    box.feed(session, "Stop", prompt_id="p1", last_assistant_message="Built: all green.")
    assert len(box.link.log.pending) >= 4  # kept on disk until the broker takes them
    await asyncio.sleep(1.5)
    machines.broker.start()

    await machines.fake.wait_for("sendMessage", lambda p: "all green" in str(p.get("text")),
                                 timeout=20)
    await settle(hub)
    await asyncio.sleep(1.0)  # anything repeated would arrive by now
    assert count(machines, "all green") == 1
    for i in range(3):
        assert count(machines, f"hiccup {i}") == 1
    order = [t for t in texts(machines) if "hiccup" in t or "all green" in t]
    assert order == ["hiccup 0", "hiccup 1", "hiccup 2", *[t for t in order if "all green" in t]]
    assert box.link.log.pending == type(box.link.log.pending)()


async def test_a_host_restarted_while_the_hub_is_down_catches_up_in_order(machines):
    hub = machines.start_hub()
    box = machines.start_host("box")
    session = box.start("jim")
    await hub_sees(hub, "claude-jim@box")

    # the hub machine goes down: its daemon and its broker
    await hub.stop()
    machines.broker.kill()
    box.feed(session, "UserPromptSubmit", prompt="first", prompt_id="p1")
    box.feed(session, "Stop", prompt_id="p1", last_assistant_message="Answer one.")
    await box.stop()  # the host restarts too, its outputs still unsent
    box = machines.start_host("box", sessions=box.sessions)
    box.feed(session, "UserPromptSubmit", prompt="second", prompt_id="p2")
    box.feed(session, "Stop", prompt_id="p2", last_assistant_message="Answer two.")

    machines.broker.start()
    hub = machines.start_hub()
    await machines.fake.wait_for("sendMessage", lambda p: "Answer two" in str(p.get("text")),
                                 timeout=20)
    await settle(hub)
    await asyncio.sleep(1.0)
    got = [t for t in texts(machines) if "Answer" in t]
    assert [t.split("\n")[-1] for t in got] == ["Answer one.", "Answer two."], got


async def test_a_hub_restart_shows_nothing_twice(machines):
    hub = machines.start_hub()
    box = machines.start_host("box")
    session = box.start("jim")
    await hub_sees(hub, "claude-jim@box")
    box.feed(session, "UserPromptSubmit", prompt="go", prompt_id="p1")
    box.feed(session, "Stop", prompt_id="p1", last_assistant_message="Done once.")
    await machines.fake.wait_for("sendMessage", lambda p: "Done once" in str(p.get("text")))
    await settle(hub)
    # the hub stops, and every record comes again (as when its acknowledgements were
    # lost): its consumer is made anew from the first record
    await hub.stop()
    nc = await connect(machines.broker.url, Creds("hub", HUB_PW))
    await nc.jetstream().delete_consumer(names.OUT_STREAM, names.out_consumer("box"))
    await nc.close()
    hub = machines.start_hub()
    box.feed(session, "UserPromptSubmit", prompt="again", prompt_id="p2")
    box.feed(session, "Stop", prompt_id="p2", last_assistant_message="Done twice.")
    await machines.fake.wait_for("sendMessage", lambda p: "Done twice" in str(p.get("text")))
    await settle(hub)
    assert count(machines, "Done once") == 1
    assert hub.link.counters["repeats_skipped"] >= 1
