"""The hub's link: every host's outputs into the chat, once; commands out to the hosts.

``HubLink.run`` (a daemon service on the hub) connects as the hub's user,
creates the streams and consumers (``streams``), then

- takes outputs and answers from ``out-<host>``, each host's in order and the
  hosts side by side (one host's burst delays only its own), each read by ``codec``.  A
  record that cannot be read is acknowledged (never given again), kept in the
  dead letters (``deadletter``) and told to the owner once per host per hour
  (``ration``): one host's bad record stops neither its later ones nor others'.  Per host it remembers
  (``taken.json``) the last record number it took; a record redelivered after a
  restart (the acknowledgement was lost) is skipped, so the chat shows it once.
  Outputs go to the chat's notifier named ``claude-jim@box``, after the session
  they carry updated the hub's view (the chat reads it while showing them);
  the chat's state is saved (``before_ack``) before the numbers, and both before
  the acknowledgement;
- reads each host's latest sessions from ``AIPAGER_STATE`` (also its sign of life);
- sends commands on ``aipager.<host>.cmd`` in the order they were made, each with
  its ``Nats-Msg-Id`` (a retried publish is stored once) and a ``ttl``: the host
  refuses one that arrives after the hub stopped waiting for it;
- makes the command consumer of a host invited while it runs.

Should any of that fail, the whole link starts again (``supervise``: backoff, the
owner told once it failed and once it is back); ``connected`` is true only while
the broker connection is up and the streams are set up.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import os
import secrets
import time
from typing import Any, Callable, Mapping

import orjson

from aipager.aio import cancel_and_wait, stop_if_cancelled
from aipager.texts import render
from aipager.port.model import State
from aipager.port.outputs import Files, Notice, NoticeName, Notifier, Output
from aipager.proto.errors import ConfigError
from aipager.hub import (codec, commands, deadletter, layout, names, ration, signing, streams,
                         supervise)
from aipager.hub.codec import BadRecord, OutputRecord, ReplyRecord, Snapshot
from aipager.hub.commands import Command, HostUnreachable
from aipager.hub.conn import connect, serve
from aipager.hub.creds import Creds
from aipager.hub.relabel import relabel
from aipager.hub.view import HostsView
from aipager.proto import fsio

log = logging.getLogger("aipager.hub")

#: records taken per fetch
BATCH = 64
#: seconds one fetch waits
FETCH_SECONDS = 1.0
#: seconds between looks for newly invited hosts
HOSTS_SECONDS = 2.0


class HubLink:
    """Args:
        env: the hub's paths (``layout``).
        url, creds: the broker and the hub's credential on it.
        notifier: where hosts' outputs go (the chat's).
        timeout: seconds a command waits for its host's answer.
        hosts: the invited hosts (their command consumers are made at start).
        before_ack: called after a batch of outputs went to the notifier, before the
            batch is acknowledged (the chat saves its state there).
        local_name: the hub machine's own host name (``jim@<it>`` is a local session).
        stable: seconds the link stays up again before the owner is told it is back.
    """

    def __init__(self, env: Mapping[str, str], url: str, creds: Creds, notifier: Notifier, *,
                 timeout: float = 15.0, hosts: Callable[[], list[str]] = list,
                 before_ack: Callable[[], Any] | None = None, local_name: str = "",
                 stable: float = supervise.STABLE_SECONDS) -> None:
        self.env = dict(env)
        self.url = url
        self.creds = creds
        self.notifier = notifier
        self.timeout = timeout
        self.view = HostsView()
        self.local_name = local_name
        #: called when what ``facts`` says changed (the composition root saves the state)
        self.on_change: Callable[[], Any] | None = None
        #: each host's online state as the owner was last told it (``_watch_online``)
        self._online: dict[str, bool] = {}
        #: the hub's signing seed (``signing.hub_seed``), read at the first command
        self._seed: str | None = None
        #: the chat's label of a host's session (``HubPort`` sets it): ``h1@box`` when
        #: another machine runs an ``h1`` (a host's texts are made again with it)
        self.label_of: Callable[[str], str | None] | None = None
        #: the broker connection is up and the streams are set up (``aipager status``)
        self.connected = False
        self.counters = {"outputs": 0, "repeats_skipped": 0, "unreadable": 0,
                         "commands": 0, "late_answers": 0, "restarts": 0}
        self.stable = stable
        #: the owner hears of a host's bad records once an hour
        self._told = ration.OncePer()
        self._hosts = hosts
        self._before_ack = before_ack
        self._taken: dict[str, list[Any]] = _read_taken(layout.taken_file(self.env))
        self._epoch = secrets.token_hex(4)
        self._ids = itertools.count(1)
        #: command id → (the host it went to, its answer to be)
        self._waiting: dict[str, tuple[str, asyncio.Future[ReplyRecord]]] = {}
        self._queue: asyncio.Queue[tuple[str, dict[str, Any], str, float]] = asyncio.Queue()
        self._tasks: set[asyncio.Task] = set()
        self._consumers: set[str] = set()
        self._nc: Any = None

    # -- what the port asks ------------------------------------------------------------

    def known(self, host: str) -> bool:
        return host in self.view.hosts or host in self._hosts()

    def check_online(self, host: str) -> None:
        """Raises:
            HostUnreachable: the host is not invited, was never heard from or is offline."""
        h = self.view.hosts.get(host)
        if h is None or not h.last_seen:
            why = "has not joined yet" if host in self._hosts() else "is not a host of this hub"
            msg = f"{host} {why}"
            raise HostUnreachable(msg)
        if not h.online():
            since = time.strftime("%H:%M", time.localtime(h.last_seen))
            msg = f"{host} is offline since {since}"
            raise HostUnreachable(msg)

    async def call(self, host: str, cmd: Command, *, timeout: float | None = None) -> Any:
        """Run ``cmd`` on ``host``; its result, or what it raised (within ``timeout`` s, the
        link's own by default).

        Raises:
            HostUnreachable: the host is offline or did not answer in time.
            HostFailed, SessionError, ValueError, …: what the host's daemon raised.
        """
        self.check_online(host)
        timeout = timeout or self.timeout
        cmd_id = self._send(host, cmd, timeout)
        future: asyncio.Future[ReplyRecord] = asyncio.get_running_loop().create_future()
        self._waiting[cmd_id] = (host, future)
        try:
            doc = await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            msg = f"{host} did not answer within {timeout:.0f} s"
            raise HostUnreachable(msg) from None
        finally:
            self._waiting.pop(cmd_id, None)
        if doc.error is not None:
            raise doc.error
        return doc.value

    def send(self, host: str, cmd: Command, *, timeout: float | None = None) -> None:
        """Send ``cmd`` to ``host`` without waiting (in order with every other command; not
        done when it reaches the host more than ``timeout`` s later); dropped with a log line
        when the host is offline."""
        try:
            self.check_online(host)
        except HostUnreachable as exc:
            log.warning("%s not sent: %s", cmd.name, exc)
            return
        self._send(host, cmd, timeout or self.timeout)

    def _send(self, host: str, cmd: Command, timeout: float) -> str:
        cmd_id = f"hub:{self._epoch}:{next(self._ids)}"
        doc = {"id": cmd_id, "ttl": timeout, "made": time.time(),
               "cmd": commands.command_to_json(cmd)}
        if self._seed is None:
            try:
                self._seed = signing.hub_seed(self.env)
            except (OSError, ConfigError) as exc:
                log.warning("commands go unsigned: the hub's signing key: %s", exc)
                self._seed = ""
        if self._seed:
            # the host runs it only as the hub made it, once, while fresh (``signing``)
            doc = signing.sign(self._seed, host, doc)
        self._queue.put_nowait((host, doc, cmd_id, time.monotonic() + timeout))
        self.counters["commands"] += 1
        return cmd_id

    def facts(self) -> dict[str, Any]:
        now = time.time()
        return {"hub": {"url": self.url, "connected": self.connected, **self.counters,
                        "hosts": {h.name: {"online": h.online(now), "last_seen": h.last_seen,
                                           "sessions": len(h.sessions),
                                           "version": h.version, "refused": h.refused}
                                  for h in self.view.hosts.values()}}}

    # -- the service -------------------------------------------------------------------

    async def run(self, _daemon: Any = None) -> None:
        """The daemon service: until cancelled at daemon shutdown (started again after a
        failure)."""
        await supervise.keep_running("the hub's link", self._run_once, self._tell,
                                     stable=self.stable)

    async def _run_once(self, up: Callable[[], None]) -> None:
        self._nc = await connect(self.url, self.creds, name="aipager hub",
                                 on_link=self._link_up)
        js = self._nc.jetstream(timeout=5)
        try:
            await self._setup(js)
            self._link_up(True)
            up()
            log.info("hub link up at %s", self.url)
            await serve(self._nc, self._tasks, (self._outputs(js), self._states(js),
                                                self._sender(js), self._watch_hosts(js)))
        finally:
            self._link_up(False)
            if not self._nc.is_closed:  # the setup failed before ``serve`` took it
                await self._nc.close()

    def _link_up(self, up: bool) -> None:
        """The broker connection (and so the link) is up or down: ``status`` says so."""
        if up and (self._nc is None or self._nc.is_closed):
            return  # a reconnect reported for a client already let go
        if self.connected != up:
            self.connected = up
            self._changed()

    def _tell(self, event: supervise.LinkEvent) -> None:
        """The owner is told the link failed (once per streak) or is back."""
        match event:
            case supervise.Lost(reason=reason):
                self.counters["restarts"] += 1
                self._say(render.hub_link_lost(reason), NoticeName.HUB_LINK,
                          {"state": "lost", "reason": reason})
            case supervise.Back():
                self._say(render.hub_link_back(), NoticeName.HUB_LINK, {"state": "back"})

    def _say(self, text: str, name: NoticeName, extra: dict[str, Any]) -> None:
        """A notice of the hub's own (no session) to whoever shows the hosts' outputs."""
        try:
            self.notifier.emit(Notice(session="", text=text, notice=name, extra=extra))
        except Exception:  # noqa: BLE001 - the chat logs its own failures
            log.exception("telling the owner %r failed", text)

    async def _setup(self, js: Any) -> None:
        while True:
            try:
                await streams.ensure_streams(js)
                hosts = list(self._hosts())
                await streams.ensure_consumers(js, hosts)
                self._consumers.update(hosts)
                await streams.fresh_state_consumer(js)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the broker is starting: try again
                stop_if_cancelled()  # nats-py may have turned the cancel into its error
                log.warning("setting up the hub's streams failed (%s); trying again", exc)
                await asyncio.sleep(1.0)

    def _watch_online(self, now: float | None = None) -> None:
        """Tell the owner, once per change, that a host went quiet or is back (going
        offline is the absence of snapshots: only a clock can see it)."""
        for h in list(self.view.hosts.values()):
            if not h.last_seen:
                continue  # never joined: nothing was reachable
            online = h.online(now)
            known = self._online.get(h.name)
            self._online[h.name] = online
            if known is None or known == online:
                continue
            if online:
                self._say(render.host_back(h.name), NoticeName.HOST_STATE,
                          {"host": h.name, "state": "back"})
            else:
                since = time.strftime("%H:%M", time.localtime(h.last_seen))
                self._say(render.host_offline(h.name, since), NoticeName.HOST_STATE,
                          {"host": h.name, "state": "offline", "since": since})
            self._changed()

    async def _watch_hosts(self, js: Any) -> None:
        while True:
            await asyncio.sleep(HOSTS_SECONDS)
            self._watch_online()
            for host in set(self._hosts()) - self._consumers:
                try:
                    await streams.ensure_host_consumer(js, host)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - next round
                    stop_if_cancelled()  # nats-py may have turned the cancel into its error
                    log.debug("making the command consumer of %s failed: %s", host, exc)
                    continue
                self._consumers.add(host)
                log.info("host %s may join now", host)

    async def _fetching(self, js: Any, stream: str, consumer: str,
                        take: Callable[[list[Any]], Any], *, remake: Any = None) -> None:
        import nats.errors

        sub = None
        while True:
            try:
                if sub is None:
                    if remake is not None:
                        await remake(js)
                    sub = await js.pull_subscribe_bind(consumer, stream)
                msgs = await sub.fetch(BATCH, timeout=FETCH_SECONDS)
            except asyncio.CancelledError:
                raise
            except nats.errors.TimeoutError:
                stop_if_cancelled()
                continue
            except Exception as exc:  # noqa: BLE001 - broker away, consumer lost
                stop_if_cancelled()
                log.debug("fetching from %s failed: %s", consumer, exc)
                if remake is not None:
                    sub = None
                await asyncio.sleep(0.5)
                continue
            await take(msgs)

    async def _outputs(self, js: Any) -> None:
        """One ordered reader per host whose consumer is made (a host invited while the
        link runs gets its reader within ``HOSTS_SECONDS``); a reader's failure is the
        link's."""
        readers: dict[str, asyncio.Task] = {}
        try:
            while True:
                for host in sorted(self._consumers - set(readers)):
                    readers[host] = asyncio.create_task(self._fetching(
                        js, names.OUT_STREAM, names.out_consumer(host), self._take_outputs))
                for task in readers.values():
                    if task.done():
                        task.result()  # raises what ended it
                if readers:
                    await asyncio.wait(set(readers.values()), timeout=HOSTS_SECONDS)
                else:
                    await asyncio.sleep(HOSTS_SECONDS)
        finally:
            await cancel_and_wait(set(readers.values()))

    async def _take_outputs(self, msgs: list[Any]) -> None:
        for msg in msgs:
            bad = self._take_one(msg)
            if bad is not None:
                # at once and confirmed: a bad record is never given to the hub again
                self._set_aside(msg, bad)
                await _ack_sync(msg)
        if self._before_ack is not None:
            try:
                self._before_ack()
            except Exception:  # noqa: BLE001 - the chat's own saving logs its errors
                log.exception("saving before acknowledging outputs failed")
        self._save_taken()
        for msg in msgs:
            with contextlib.suppress(Exception):
                await msg.ack()

    def _take_one(self, msg: Any) -> str | None:
        """One record of a host's output consumer taken; why it cannot be, for a bad one."""
        host = names.host_of_subject(msg.subject)
        if host is None:
            return "not on a host's subject"
        rec = codec.read_out(msg.data)
        if isinstance(rec, BadRecord):
            return rec.reason
        self._heard(host, msg)
        taken = self._taken.get(host)
        if taken is not None and taken[0] == rec.epoch and rec.seq <= int(taken[1]):
            self.counters["repeats_skipped"] += 1
            return None
        self._taken[host] = [rec.epoch, rec.seq]
        try:
            match rec:
                case ReplyRecord():
                    return self._take_reply(host, rec)
                case OutputRecord():
                    self._take_output(host, rec)
        except Exception as exc:  # noqa: BLE001 - a record the hub fails on must not stop it
            log.exception("taking a record from %s failed", host)
            return f"the hub failed on it: {type(exc).__name__}"[:codec.REASON_CHARS]
        return None

    def _heard(self, host: str, msg: Any) -> None:
        """A record the host published is a sign of life as a snapshot is, as of when the
        broker stored it (an old one read late says nothing of now): a host whose session
        the hub learnt of from an output is not "not joined yet" until its first snapshot."""
        try:
            at = float(msg.metadata.timestamp.timestamp())
        except Exception:  # noqa: BLE001 - a message without JetStream metadata
            return
        h = self.view.host(host)
        h.last_seen = max(h.last_seen, min(at, time.time()))

    def _set_aside(self, msg: Any, reason: str) -> None:
        """A record that cannot be read: kept in the dead letters, the owner told (rationed)."""
        host = names.host_of_subject(msg.subject) or "?"
        self.counters["unreadable"] += 1
        try:
            seq = int(msg.metadata.sequence.stream)
        except Exception:  # noqa: BLE001 - a message without JetStream metadata
            seq = 0
        log.warning("a record from %s on %s (sequence %d) cannot be read (%s); set aside",
                    host, msg.subject, seq, reason)
        deadletter.keep(layout.dead_letters(self.env),
                        deadletter.entry(host, msg.subject, seq, reason, msg.data or b""))
        held_back = self._told.allow(host, time.monotonic())
        if held_back is not None:
            self._say(render.hub_bad_record(host, reason, held_back), NoticeName.HUB_BAD_RECORD,
                      {"host": host, "reason": reason, "held_back": held_back})

    def _take_reply(self, host: str, rec: ReplyRecord) -> str | None:
        to, future = self._waiting.get(rec.id, ("", None))
        if future is not None and to != host:
            return f"an answer to a command sent to {to}"
        if future is None or future.done():
            self.counters["late_answers"] += 1
            log.info("answer %s came after its command stopped waiting: %s", rec.id,
                     rec.error or "done")
            return None
        future.set_result(rec)
        return None

    def _take_output(self, host: str, rec: OutputRecord) -> None:
        if rec.sess is not None:
            had = self._live_names(host)
            self.view.note_session(host, rec.sess, rec.stamp)
            now = self._live_names(host)
            if now != had:  # an output may tell of a session before the next snapshot does
                log.info("host %s: sessions %s", host, ", ".join(now) or "none")
                self._changed()
        self.counters["outputs"] += 1
        out = as_hub_output(rec.out, host)
        shown = self.label_of(out.session) if self.label_of is not None else None
        if shown:  # two machines run an ``h1``: the host's own text says which
            out = dataclasses.replace(out, text=relabel(out.text, shown))
        self.notifier.emit(out)

    def _save_taken(self) -> None:
        try:
            _write_taken(layout.taken_file(self.env), self._taken)
        except OSError as exc:
            log.error("cannot save which outputs the chat took: %s", exc.strerror)

    async def _states(self, js: Any) -> None:
        await self._fetching(js, names.STATE_STREAM, names.HUB_STATE_CONSUMER,
                             self._take_states, remake=streams.fresh_state_consumer)

    async def _take_states(self, msgs: list[Any]) -> None:
        for msg in msgs:
            host = names.host_of_subject(msg.subject)
            if host is None:
                continue
            rec = codec.read_state(msg.data)
            if isinstance(rec, BadRecord):
                self._set_aside(msg, rec.reason)  # (no acknowledgement: the latest one is kept)
                continue
            try:
                self._take_snapshot(host, rec, msg.metadata.timestamp.timestamp())
            except Exception as exc:  # noqa: BLE001 - as in ``_take_one``
                log.exception("taking the sessions of %s failed", host)
                self._set_aside(msg, f"the hub failed on it: {type(exc).__name__}")

    def _take_snapshot(self, host: str, rec: Snapshot, seen_at: float) -> None:
        h = self.view.host(host)
        was_online, had = h.online(), self._live_names(host)
        self.view.note_snapshot(host, rec.sessions, rec.stamp, seen_at, rec.heartbeat,
                                rec.version, rec.refused)
        now = self._live_names(host)
        if h.online() and not was_online:
            log.info("host %s is online: sessions %s", host, ", ".join(now) or "none")
            self._watch_online()  # back: said at once, not at the next look
        elif now != had:
            log.info("host %s: sessions %s", host, ", ".join(now) or "none")
        if now != had or h.online() != was_online:
            self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:  # noqa: BLE001 - a failing save logs itself
                log.exception("saving the hub's facts failed")

    def _live_names(self, host: str) -> list[str]:
        h = self.view.hosts.get(host)
        return sorted(n for n, (_, s) in h.sessions.items() if s.state != State.GONE) \
            if h is not None else []

    async def _sender(self, js: Any) -> None:
        while True:
            host, doc, cmd_id, deadline = await self._queue.get()
            data = codec.dumps(doc)
            while True:
                try:
                    await js.publish(names.cmd_subject(host), data,
                                     headers={"Nats-Msg-Id": cmd_id})
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the broker is away: until the deadline
                    stop_if_cancelled()  # nats-py may have turned the cancel into its error
                    if time.monotonic() > deadline:
                        log.warning("command %s for %s not sent: %s", cmd_id, host, exc)
                        break
                    await asyncio.sleep(0.2)


async def _ack_sync(msg: Any) -> None:
    try:
        await msg.ack_sync(timeout=5)
    except Exception as exc:  # noqa: BLE001 - the broker is away: it gives the record again
        log.warning("acknowledging a bad record failed (%s)", exc)


def as_hub_output(out: Output, host: str) -> Output:
    """A host's output as the hub's chat shows it: its session named ``claude-jim@box``,
    no journal number of the host's (the hub's ``taken`` keeps it from showing twice).
    Files stay on the host: the chat is told where they are."""
    session = names.qualify(out.session, host)
    if isinstance(out, Files):
        # what the host's own check refused is said as such, not as a file kept there;
        # worded again in each chat's language from ``extra`` (``render.notice``)
        refused = [{"path": os.path.basename(r.path), "reason": r.reason} for r in out.refused]
        gone = {r.path for r in out.refused}
        kept = [os.path.basename(f) for f in out.files if f not in gone]
        label = f"{out.session.removeprefix('claude-')}@{host}"
        return Notice(session=session, text=render.files_on_host(label, host, kept, refused),
                      notice=NoticeName.FILES_ON_HOST,
                      extra={"host": host, "kept": kept, "refused": refused})
    return dataclasses.replace(out, session=session, origin=0, replayed=False)


def _read_taken(path: str) -> dict[str, list[Any]]:
    try:
        with open(path, "rb") as fh:
            doc = orjson.loads(fh.read())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, list) and len(v) == 2} \
        if isinstance(doc, dict) else {}


def _write_taken(path: str, taken: dict[str, list[Any]]) -> None:
    layout.make_private(os.path.dirname(path))
    fsio.write_atomic(path, orjson.dumps(taken), 0o600)

