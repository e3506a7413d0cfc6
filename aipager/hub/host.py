"""A joined host: its daemon's outputs go to the hub, the hub's commands run here.

``HostLink`` is the host daemon's ``Notifier`` (``emit`` appends each output,
with the session it is about, to the durable ``OutLog``) and its service
(``run``): connected to the broker with the host's own credential, it

- publishes the log in order, each record with its ``Nats-Msg-Id``, dropping
  a record from the log only once the broker acknowledged it;
- publishes the host's sessions on ``aipager.<host>.state`` whenever they
  change, and at least every ``HEARTBEAT`` seconds (the hub's sign of life);
- fetches the commands addressed to it from the consumer ``cmd-<host>`` the hub
  made, marks each started (durably) before running it on its own daemon,
  publishes the answer through the log, then acknowledges it.  A command the
  hub no longer waits for (older than its ``ttl``) is refused, not run late.

Should any of that fail, the link starts again (``supervise``: backoff);
``connected`` is true only while the broker connection is up (a frozen broker
counts as down once its pings go unanswered: ``conn``), and ``since`` says from
when.  A broker that refuses the credential (the hub revoked this host) is
said as ``revoked`` (status, doctor, the log) and asked again only every
``REFUSED_RETRY`` seconds.

The hook's safety decision never involves the link: a tap arrives as a
command, and this daemon answers its own hook.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Callable, Mapping

from aipager import __version__
from aipager.aio import stop_if_cancelled
from aipager.port.outputs import Output
from aipager.port.door import Port
from aipager.proto.errors import ConfigError, HubRefused
from aipager.hub import codec, commands, layout, names, signing, supervise
from aipager.hub.conn import connect, serve
from aipager.hub.creds import Creds
from aipager.hub.outlog import OutLog

log = logging.getLogger("aipager.hub")

#: seconds between session snapshots when nothing changes (the hub's sign of life)
HEARTBEAT = 5.0
#: seconds between checks for changed sessions
STATE_CHECK = 0.2
#: seconds one publish waits for the broker's acknowledgement before trying again
PUBLISH_TIMEOUT = 3.0
#: seconds one fetch of commands waits
FETCH_SECONDS = 2.0
#: seconds between two tries once the hub refused this host's credential (revoked: a new
#: invite is needed, which a person brings; asking every second would only fill logs)
REFUSED_RETRY = 600.0


class HostLink:
    """Args:
        env: this host's paths (``layout.link_dir``).
        url: the broker (``nats://hub:4222``).
        creds: this host's credential; its user is the host's name.
    """

    def __init__(self, env: Mapping[str, str], url: str, creds: Creds) -> None:
        self.env = dict(env)
        self.url = url
        self.creds = creds
        self.host = names.check_host(creds.user)
        self.log = OutLog(layout.link_meta(self.env), layout.link_outbox(self.env))
        #: the one door ``main`` composed: the service that decides the hub's asks, and
        #: the sessions this host publishes (``attach``)
        self.port: Port | None = None
        self.connected = False
        #: wall-clock time ``connected`` last changed (None before the first try)
        self.since: float | None = None
        #: the broker refused this host's credential (revoked) at the last try
        self.revoked = False
        #: why the link cannot join the hub ("" while nothing stands in its way)
        self.problem = ""
        self.counters = {"published": 0, "commands": 0, "commands_refused": 0,
                         "commands_replayed": 0}
        #: ids of the signed commands run (``signing.Replays``)
        self._replays = signing.Replays()
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()
        self._state_version: Any = None
        self._state_sent = 0.0
        self._nc: Any = None
        #: called when what ``facts`` says changed (the composition root saves the state)
        self.on_change: Callable[[], Any] | None = None

    # -- the daemon's side -----------------------------------------------------------

    def attach(self, port: Port) -> None:
        """Bind to the one door ``main`` composed (the service that decides the hub's asks,
        and the sessions this publishes), before it serves."""
        self.port = port
        # the hub's chat shows previews where a chat turned them on: make them
        port.set_previews(True)
        port.add_facts(self.facts)

    def facts(self) -> dict[str, Any]:
        return {"hub_link": {"host": self.host, "url": self.url, "connected": self.connected,
                             "since": self.since, "revoked": self.revoked,
                             "problem": self.problem or None,
                             "unsent": len(self.log.pending), **self.counters}}

    def emit(self, out: Output) -> None:
        """Keep ``out`` for the hub (never blocks, never raises for delivery)."""
        if out.origin and out.replayed and out.origin <= self.log.taken:
            return  # published before the daemon was killed: not twice
        try:
            sess = self.port.sessions.get(out.session) if self.port is not None else None
            rec = {"type": "output", "out": codec.output_to_json(out),
                   "sess": codec.session_to_json(sess) if sess is not None else None,
                   "stamp": _stamp()}
            self.log.append(rec, out.origin if not out.replayed else 0)
        except Exception:  # noqa: BLE001 - a bad output must not break event handling
            log.exception("keeping a %s output for the hub failed", out.kind)
            return
        self._wake.set()

    # -- the service -----------------------------------------------------------------

    def _bound(self) -> Port:
        """The daemon this host link serves (``run`` binds it first)."""
        if self.port is None:
            msg = "the host link runs bound to its daemon's port"
            raise RuntimeError(msg)
        return self.port

    async def run(self, _daemon: object = None) -> None:
        """The daemon service: until cancelled at daemon shutdown (started again after a
        failure).  ``main`` attached the door first (the daemon given here is not one)."""
        if self.port is None:
            msg = "attach the host link to the daemon before running it"
            raise RuntimeError(msg)
        try:
            # (the host has no chat to tell: ``keep_running`` logs each failure)
            await supervise.keep_running("the link to the hub", self._run_once,
                                         lambda _event: None)
        finally:
            self.log.close()

    async def _run_once(self, up: Callable[[], None]) -> None:
        try:
            await self._connected_once(up)
        except HubRefused as exc:
            self._refused(exc)
            await asyncio.sleep(REFUSED_RETRY)
            raise  # tried again (``keep_running``): a new invite may have the same name

    def _refused(self, exc: HubRefused) -> None:
        """The hub revoked this host: said once per streak, in the log and the state."""
        self._link_up(False)
        self.counters["refused"] = self.counters.get("refused", 0) + 1
        if not self.revoked:
            log.error("the hub at %s refused this host (%s): %s; trying again every %.0f "
                      "minutes", self.url, self.host, exc, REFUSED_RETRY / 60)
        self.revoked, self.problem = True, str(exc)
        if self.on_change is not None:
            self.on_change()

    async def _connected_once(self, up: Callable[[], None]) -> None:
        try:
            self._nc = await connect(self.url, self.creds,
                                     inbox_prefix=names.inbox_prefix(self.host),
                                     name=f"aipager host {self.host}", on_link=self._link_up)
        except HubRefused:
            raise
        except ConfigError as exc:
            # (TLS that cannot work): said once, shown by `aipager status`, not retried
            self.problem = str(exc)
            log.error("cannot join the hub: %s", exc)
            if self.on_change is not None:
                self.on_change()
            return
        self.revoked, self.problem = False, ""
        self._link_up(True)
        up()
        log.info("joined the hub at %s as %s", self.url, self.host)
        js = self._nc.jetstream(timeout=PUBLISH_TIMEOUT)
        try:
            await serve(self._nc, self._tasks,
                        (self._publish(js), self._states(js), self._commands(js)))
        finally:
            self._link_up(False)

    def _link_up(self, up: bool) -> None:
        """The broker connection is up or down: ``status`` says so."""
        if up and (self._nc is None or self._nc.is_closed):
            return  # a reconnect reported for a client already let go
        if self.connected != up or self.since is None:
            self.connected, self.since = up, time.time()
            if self.on_change is not None:
                self.on_change()

    async def _publish(self, js: Any) -> None:
        subject = names.out_subject(self.host)
        while True:
            if not self.log.pending:
                self._wake.clear()
                await self._wake.wait()
                continue
            seq, rec = self.log.pending[0]
            try:
                await js.publish(subject, codec.dumps({**rec, "seq": seq, "epoch": self.log.epoch}),
                                 headers={"Nats-Msg-Id": self.log.msg_id(self.host, seq)})
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the broker is away: try again
                stop_if_cancelled()  # nats-py may have turned the cancel into its error
                log.debug("publish %d to the hub failed (%s); trying again", seq, exc)
                await asyncio.sleep(0.2)
                continue
            self.counters["published"] += 1
            self.log.acked(seq)

    async def _states(self, js: Any) -> None:
        subject = names.state_subject(self.host)
        while True:
            await asyncio.sleep(STATE_CHECK)
            port = self._bound()
            version = getattr(port.sessions, "version", None)
            now = time.monotonic()
            if version == self._state_version and now - self._state_sent < HEARTBEAT:
                continue
            doc = {"sessions": [codec.session_to_json(s) for s in port.sessions],
                   "stamp": _stamp(), "sent_at": time.time(), "heartbeat": HEARTBEAT,
                   "version": __version__, "refused": self.counters["commands_refused"]
                   + self.counters["commands_replayed"]}
            try:
                await js.publish(subject, codec.dumps(doc))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the broker is away: next round
                stop_if_cancelled()  # nats-py may have turned the cancel into its error
                log.debug("publishing sessions failed: %s", exc)
                continue
            self._state_version, self._state_sent = version, now

    async def _commands(self, js: Any) -> None:
        import nats.errors

        sub = None
        while True:
            try:
                if sub is None:
                    sub = await js.pull_subscribe_bind(names.cmd_consumer(self.host),
                                                       names.CMD_STREAM)
                msgs = await sub.fetch(16, timeout=FETCH_SECONDS)
            except asyncio.CancelledError:
                raise
            except nats.errors.TimeoutError:
                stop_if_cancelled()
                continue
            except Exception as exc:  # noqa: BLE001 - no consumer yet, broker away
                stop_if_cancelled()
                log.debug("fetching commands failed: %s", exc)
                await asyncio.sleep(1.0)
                continue
            for msg in msgs:
                await self._take(msg)

    async def _take(self, msg: Any) -> None:
        """One command: refused when malformed or too old, skipped when started before,
        else started (in arrival order) and acknowledged when its answer is kept."""
        meta = msg.metadata
        cmd_id = None
        try:
            doc = codec.loads(msg.data)
            cmd_id = str(doc["id"])
            cmd = commands.command_from_json(doc["cmd"])
        except (codec.CodecError, KeyError, TypeError) as exc:
            log.warning("a command from the hub that cannot be read (%s); dropped", exc)
            if cmd_id is not None:  # the hub hears why at once, not after its timeout
                self._answer(cmd_id, commands.error_to_json(commands.HostFailed(
                    f"{self.host} could not read the command ({str(exc)[:300]}): is it "
                    "the hub's version of aipager?")))
            await _ack(msg)
            return
        if not self.log.start_command(meta.sequence.stream):
            # started before a restart: its answer (if it had one) is in the log already
            self._answer(cmd_id, commands.error_to_json(
                commands.HostFailed("the host restarted while doing it")))
            await _ack(msg)
            return
        if self.creds.hub_key:
            why = signing.why_refused(self.creds.hub_key, self.host, doc, time.time(),
                                      self._replays)
            if why:
                # not what the hub made, or not now: counted where the owner sees it
                key = "commands_replayed" if why == "replayed" else "commands_refused"
                self.counters[key] = self.counters.get(key, 0) + 1
                log.warning("a command from the hub was refused: %s (%s)", why, cmd.name)
                if why != "replayed":  # a replay's id was answered when it first ran
                    self._answer(cmd_id, commands.error_to_json(commands.HostFailed(
                        f"{self.host} refused the command: {why}")))
                await _ack(msg)
                return
        age = time.time() - meta.timestamp.timestamp()
        ttl = float(doc.get("ttl") or 0)
        if ttl and age > ttl:
            self.counters["commands_refused"] += 1
            log.info("command %s from the hub came %.0f s late; not run", cmd.name, age)
            self._answer(cmd_id, commands.error_to_json(
                commands.HostUnreachable(f"{self.host} got it {age:.0f} s late; not done")))
            await _ack(msg)
            return
        self.counters["commands"] += 1
        task = asyncio.create_task(self._run(cmd, cmd_id, msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        # queue/drop first, then typing: let the fire-and-forget ones finish in order
        if cmd.name in commands.FIRE_AND_FORGET:
            await task

    async def _run(self, cmd: commands.Command, cmd_id: str, msg: Any) -> None:
        try:
            value = await cmd.run(self._bound())
            answer = commands.result_to_json(value)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is an answer
            if not isinstance(exc, (ValueError, commands.HostFailed)) and \
                    type(exc).__module__ != "aipager.proto.errors":
                log.exception("command %s from the hub failed", cmd.name)
            answer = commands.error_to_json(exc)
        self._answer(cmd_id, answer)
        await _ack(msg)

    def _answer(self, cmd_id: str, answer: dict[str, Any]) -> None:
        self.log.append({"type": "reply", "id": cmd_id, **answer, "stamp": _stamp()})
        self._wake.set()


async def _ack(msg: Any) -> None:
    with contextlib.suppress(Exception):
        await msg.ack_sync(timeout=PUBLISH_TIMEOUT)


_BOOT = time.time_ns()
_count = 0


def _stamp() -> list[int]:
    """An order for what a host says about its sessions: later is larger, across restarts
    (the boot time first) and within one run (a counter)."""
    global _count
    _count += 1
    return [_BOOT, _count]
