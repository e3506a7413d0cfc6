"""A host's credential is good for its own subjects only; the broker refuses the rest."""

from __future__ import annotations

import asyncio

import nats
import pytest
from hub.conftest import HUB_PW, PASSWORDS

from aipager.hub import names, streams
from aipager.hub.conn import connect
from aipager.hub.creds import Creds


async def _as(broker, user, errors):
    async def on_error(exc):
        errors.append(str(exc))

    return await nats.connect(broker.url, user=user, password=PASSWORDS[user],
                              inbox_prefix=names.inbox_prefix(user), error_cb=on_error,
                              max_reconnect_attempts=0)


async def _setup(broker):
    nc = await connect(broker.url, Creds("hub", HUB_PW))
    js = nc.jetstream()
    await streams.ensure_streams(js)
    await streams.ensure_consumers(js, sorted(PASSWORDS))
    return nc, js


async def test_a_host_cannot_use_another_hosts_subjects(broker):
    hub, hjs = await _setup(broker)
    errors: list[str] = []
    box = await _as(broker, "box", errors)
    bjs = box.jetstream(timeout=1)

    # its own: allowed
    ack = await bjs.publish(names.out_subject("box"), b"{}", headers={"Nats-Msg-Id": "box:1"})
    assert ack.stream == names.OUT_STREAM

    # another host's outputs, state, commands: refused, nothing stored
    for subject in (names.out_subject("vm"), names.state_subject("vm"), names.cmd_subject("vm"),
                    names.cmd_subject("box")):
        with pytest.raises(nats.errors.TimeoutError):
            await bjs.publish(subject, b"{}")
    # another host's command consumer: refused
    other = await bjs.pull_subscribe_bind(names.cmd_consumer("vm"), names.CMD_STREAM)
    with pytest.raises(nats.errors.TimeoutError):
        await other.fetch(1, timeout=1)
    # listening to another host (or to every host): refused
    await box.subscribe(names.cmd_subject("vm"))
    await box.subscribe("aipager.>")
    await box.flush()
    # stream administration: refused (the hub makes every stream and consumer)
    with pytest.raises(nats.errors.TimeoutError):
        await bjs.delete_stream(names.OUT_STREAM)
    await asyncio.sleep(0.3)

    violations = [e for e in errors if "permissions violation" in e.lower()]
    for subject in ("aipager.vm.out", "aipager.vm.state", "aipager.vm.cmd", "aipager.box.cmd",
                    "$js.api.consumer.msg.next.aipager_cmd.cmd-vm", "aipager.>",
                    "$js.api.stream.delete.aipager_out"):
        assert any(subject in v.lower() for v in violations), (subject, violations)
    out = await hjs.stream_info(names.OUT_STREAM)
    assert out.state.messages == 1  # only box's own
    cmd = await hjs.stream_info(names.CMD_STREAM)
    assert cmd.state.messages == 0
    await box.close()
    await hub.close()


async def test_a_wrong_password_or_user_is_refused(broker):
    for user, password in (("box", "not-it"), ("stranger", PASSWORDS["box"])):
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(broker.url, user=user, password=password,
                               max_reconnect_attempts=0, allow_reconnect=False)
