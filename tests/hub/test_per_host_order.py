"""Each host is read in its own order, the hosts side by side (issue 34): one host's burst
of a thousand outputs no longer holds another host's next output behind it all."""

from __future__ import annotations

from bot.conftest import eventually
from hub.conftest import hub_sees
from hub.test_bad_records import published, say

from aipager.hub import names, streams

BURST = 1000


async def test_a_hosts_burst_does_not_hold_back_another_hosts_output(machines):
    hub = machines.start_hub()  # makes the streams and each host's consumers
    box, vm = machines.start_host("box"), machines.start_host("vm")
    jim, web = box.start("jim"), vm.start("web")
    await hub_sees(hub, "claude-jim@box")
    await hub_sees(hub, "claude-web@vm")
    await hub.stop()

    # while the hub is away: box says a thousand things, then vm says one
    for i in range(BURST):
        say(box, jim, f"box {i}")
    await published(box)
    say(vm, web, "vm after the burst")
    await published(vm)

    seen: list[str] = []
    hub = machines.start_hub()
    real = hub.link.notifier

    class Recording:
        def emit(self, out):
            seen.append(out.text)
            real.emit(out)

    hub.link.notifier = Recording()  # (before the link's first await: it sees every output)
    await eventually(lambda: "vm after the burst" in seen, 30, "vm's output taken")
    # one reader for all hosts took vm's output after all of box's; now box's backlog is
    # still being taken when vm's arrives
    assert seen.index("vm after the burst") < BURST // 2, seen.index("vm after the burst")
    await eventually(lambda: f"box {BURST - 1}" in seen, 60, "box's burst taken")
    assert [t for t in seen if t.startswith("box ")] == [f"box {i}" for i in range(BURST)]


async def test_every_stream_is_bounded_and_discards_its_oldest(machines):
    hub = machines.start_hub()
    await eventually(lambda: hub.link.connected, 10, "the hub's link up")
    js = hub.link._nc.jetstream()
    limits = {}
    for stream in (names.OUT_STREAM, names.CMD_STREAM, names.STATE_STREAM):
        config = (await js.stream_info(stream)).config
        assert getattr(config.discard, "value", config.discard) == "old"
        assert 0 < config.max_bytes
        limits[stream] = config
    assert sum(c.max_bytes for c in limits.values()) < 2 * 1000 ** 3  # the server's store
    assert limits[names.OUT_STREAM].max_msgs_per_subject == streams.OUT_MAX_PER_HOST
    assert limits[names.CMD_STREAM].max_msgs_per_subject == streams.CMD_MAX_PER_HOST
    consumers = {c.name async for c in _consumers(js, names.OUT_STREAM)}
    assert consumers == {"out-box", "out-vm"}


async def _consumers(js, stream):
    for info in await js.consumers_info(stream):
        yield info
