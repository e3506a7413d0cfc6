"""The streams and consumers, all made by the hub (hosts have no right to).

- ``AIPAGER_OUT`` (``aipager.*.out``): every host's outputs and answers, on file,
  deduplicated by ``Nats-Msg-Id`` for ``DUPLICATE_WINDOW``; read by the hub's
  durable consumer ``out-<host>`` per host (explicit acknowledgement, in order per
  host; one host's burst does not wait others' behind it).

Every stream is bounded in bytes (together below the server's 2 GB file store) and
per host in messages, discarding its oldest records: at a limit the broker makes room
rather than refusing a host's publish, which the host would retry silently for ever;
one host's flood pushes out its own oldest records, not another host's.
- ``AIPAGER_CMD`` (``aipager.*.cmd``): commands for the hosts, deduplicated the
  same way; one durable consumer ``cmd-<host>`` per invited host.
- ``AIPAGER_STATE`` (``aipager.*.state``): each host's latest sessions (one
  message per subject).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterable

from aipager.hub import names

log = logging.getLogger("aipager.hub")

#: how long the broker remembers a message id: a retried publish inside it is stored once
DUPLICATE_WINDOW = 3600.0
#: outputs nobody took are dropped after a week; commands after a day
OUT_MAX_AGE = 7 * 24 * 3600.0
CMD_MAX_AGE = 24 * 3600.0
#: each stream's bytes at most (their sum stays under ``server.MAX_FILE``, 2 GB)
OUT_MAX_BYTES = 1024 * 1024 * 1024
CMD_MAX_BYTES = 512 * 1024 * 1024
STATE_MAX_BYTES = 64 * 1024 * 1024
#: records kept per host's subject: a week of a busy host's outputs, a day of commands
OUT_MAX_PER_HOST = 200_000
CMD_MAX_PER_HOST = 20_000
#: a host acknowledges a command when it is done: a slow one (a question's dialog) takes
#: some seconds
CMD_ACK_WAIT = 120.0
OUT_ACK_WAIT = 30.0


def _api() -> Any:
    from nats.js import api

    return api


async def ensure_streams(js: Any) -> None:
    """Create (or bring up to date) the three streams."""
    api = _api()
    configs = [
        api.StreamConfig(name=names.OUT_STREAM, subjects=["aipager.*.out"],
                         storage=api.StorageType.FILE, duplicate_window=DUPLICATE_WINDOW,
                         max_age=OUT_MAX_AGE, max_bytes=OUT_MAX_BYTES,
                         max_msgs_per_subject=OUT_MAX_PER_HOST, discard=api.DiscardPolicy.OLD),
        api.StreamConfig(name=names.CMD_STREAM, subjects=["aipager.*.cmd"],
                         storage=api.StorageType.FILE, duplicate_window=DUPLICATE_WINDOW,
                         max_age=CMD_MAX_AGE, max_bytes=CMD_MAX_BYTES,
                         max_msgs_per_subject=CMD_MAX_PER_HOST, discard=api.DiscardPolicy.OLD),
        api.StreamConfig(name=names.STATE_STREAM, subjects=["aipager.*.state"],
                         storage=api.StorageType.FILE, max_msgs_per_subject=1,
                         max_bytes=STATE_MAX_BYTES, discard=api.DiscardPolicy.OLD),
    ]
    for config in configs:
        await _add_or_update(js, config)


async def _add_or_update(js: Any, config: Any) -> None:
    """Make the stream, or bring an existing one to ``config`` (an older aipager's had no
    byte limits).  Never ``add_stream`` over an existing one: the server counts its bytes
    limit again beside the one it reserved already and answers "insufficient storage"."""
    from nats.js.errors import NotFoundError

    try:
        await js.stream_info(config.name)
    except NotFoundError:
        await js.add_stream(config)
        return
    await js.update_stream(config)


async def ensure_consumers(js: Any, hosts: Iterable[str]) -> None:
    """Each host's output and command consumers (existing ones stay); the single output
    consumer of older versions goes (each host's own consumer gives its records again
    from the first kept: the hub's ``taken`` numbers skip what the chat showed)."""
    from nats.js.errors import NotFoundError

    with contextlib.suppress(NotFoundError):
        await js.delete_consumer(names.OUT_STREAM, names.OLD_OUT_CONSUMER)
    for host in hosts:
        await ensure_host_consumer(js, host)


async def ensure_host_consumer(js: Any, host: str) -> None:
    """The hub's consumer of ``host``'s outputs, and ``host``'s of its commands."""
    api = _api()
    await _add_consumer(js, names.OUT_STREAM, api.ConsumerConfig(
        durable_name=names.out_consumer(host), filter_subject=names.out_subject(host),
        ack_policy=api.AckPolicy.EXPLICIT, deliver_policy=api.DeliverPolicy.ALL,
        ack_wait=OUT_ACK_WAIT, max_deliver=-1, max_ack_pending=1000))
    await _add_consumer(js, names.CMD_STREAM, api.ConsumerConfig(
        durable_name=names.cmd_consumer(host), filter_subject=names.cmd_subject(host),
        ack_policy=api.AckPolicy.EXPLICIT, deliver_policy=api.DeliverPolicy.ALL,
        ack_wait=CMD_ACK_WAIT, max_deliver=-1, max_ack_pending=100))


async def _add_consumer(js: Any, stream: str, config: Any) -> None:
    from nats.js.errors import BadRequestError, NotFoundError

    try:
        await js.consumer_info(stream, config.durable_name)
        return
    except NotFoundError:
        pass
    try:
        await js.add_consumer(stream, config)
    except BadRequestError as exc:
        log.warning("consumer %s on %s: %s", config.durable_name, stream, exc)


async def fresh_state_consumer(js: Any) -> None:
    """The hub's consumer of the hosts' sessions, made anew: it starts at each host's
    latest message."""
    api = _api()
    from nats.js.errors import NotFoundError

    try:
        await js.delete_consumer(names.STATE_STREAM, names.HUB_STATE_CONSUMER)
    except NotFoundError:
        pass
    await js.add_consumer(names.STATE_STREAM, api.ConsumerConfig(
        durable_name=names.HUB_STATE_CONSUMER, filter_subject="aipager.*.state",
        ack_policy=api.AckPolicy.NONE, deliver_policy=api.DeliverPolicy.LAST_PER_SUBJECT))
