"""Connecting to the broker: retried until it answers, reconnecting for ever after.

The client pings the broker every ``PING_SECONDS`` and takes ``MAX_PINGS_OUT`` unanswered
pings as a lost connection: a broker that is frozen (stopped, its machine suspended, a
network that drops packets without a reset) keeps the socket open, and nats-py's own
two-minute default would show the link "connected" for minutes.  A broker that refuses the
credential ("Authorization Violation": the host was revoked) is ``HubRefused``, at the first
connection or later, and not retried by the client.

A credential with the hub's CA certificate connects over TLS, trusting that CA
alone; one without is refused for a hub beyond loopback before anything is
sent (``check_transport``).  A TLS failure is not retried: a certificate that
does not verify stays so until the credential changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from typing import Any, Callable, Coroutine, Iterable
from urllib.parse import urlsplit

from aipager.aio import cancel_and_wait
from aipager.proto.errors import ConfigError, HubRefused
from aipager.hub import tls
from aipager.hub.creds import Creds

log = logging.getLogger("aipager.hub")

#: seconds between connection attempts while the broker does not answer
RETRY_SECONDS = 1.0
#: seconds between the client's pings, and how many may go unanswered before the
#: connection counts as lost (so a frozen broker shows within about 15 s)
PING_SECONDS = 5
MAX_PINGS_OUT = 2
#: seconds between two looks at whether the client closed itself
CLOSED_CHECK = 0.5
#: seconds a client's close may take before the link goes on without it
CLOSE_SECONDS = 5.0
#: seconds a lost connection waits before a fresh one asks the broker whether it still
#: takes this credential (nats-py's own reconnects may go silent after the broker dropped a
#: revoked client: the link would wait for ever, "reconnecting")
PROBE_SECONDS = 5.0


async def connect(url: str, creds: Creds, *, inbox_prefix: str = "_INBOX",
                  name: str = "aipager", on_link: Callable[[bool], Any] | None = None) -> Any:
    """A connected ``nats.aio.client.Client``; waits (retrying) until the broker answers.

    The client reconnects by itself after that (no limit), and publishes made while
    it reconnects wait in its buffer; ``on_link`` hears False when the connection is
    lost and True when it is back (a link's ``connected`` follows it).  An authorization failure is logged once per
    attempt streak, never with the password.
    """
    import nats

    check_transport(url, creds)
    # (a dict: nats-py's annotations want an int where it takes any number of seconds)
    options: dict[str, Any] = ({"nkeys_seed_str": creds.seed} if creds.seed
                               else {"user": creds.user, "password": creds.password})
    options["reconnect_time_wait"] = RETRY_SECONDS
    options["ping_interval"] = PING_SECONDS
    options["max_outstanding_pings"] = MAX_PINGS_OUT
    if creds.ca:
        options["tls"] = tls.client_context(creds.ca)
    told = False
    client: list[Any] = []
    refused: list[ssl.SSLError] = []
    denied: list[Exception] = []
    attempt: asyncio.Task | None = None
    probes: list[asyncio.Future] = []

    async def on_error(exc: Exception) -> None:
        if isinstance(exc, ssl.SSLError) and not client and attempt is not None:
            # the client would retry a handshake that cannot succeed, for ever: stop it
            refused.append(exc)
            attempt.cancel()
            return
        if not client and is_refusal(exc) and attempt is not None:
            # the first connection refused: nats-py would ask again every second, for ever
            denied.append(exc)
            attempt.cancel()
            return
        if client and is_refusal(exc) and not client[0].is_closed:
            # a reconnect refused: the client would ask again every second for ever; closed,
            # ``serve`` ends the link with ``HubRefused`` (remembered here: nats-py's own
            # last error may be the close's by the time the link looks)
            client[0].aipager_refused = exc
            asyncio.ensure_future(close_quietly(client[0]))
            return
        log.warning("broker %s: %s", url, exc)

    async def probe(nc: Any) -> None:
        """While the client is lost, a fresh connection asks whether the credential is
        still taken; refused: the client is closed as refused (``_until_closed``)."""
        while not nc.is_closed:
            await asyncio.sleep(PROBE_SECONDS)
            if nc.is_closed or nc.is_connected:
                return
            fresh = nats.NATS()
            try:
                await fresh.connect(servers=[url], allow_reconnect=False, connect_timeout=2,
                                    max_reconnect_attempts=0, name=f"{name} (probe)",
                                    error_cb=_quiet, **options)
            except Exception as exc:  # noqa: BLE001 - only a refusal matters here
                if is_refusal(exc):
                    nc.aipager_refused = exc
                    await close_quietly(nc)
                    return
            finally:
                await close_quietly(fresh)

    async def on_disconnect() -> None:
        if client and client[0].is_closed:
            return  # our own close, at shutdown
        log.warning("lost the broker at %s; reconnecting", url)
        if on_link is not None:
            on_link(False)
        if client and (not probes or probes[-1].done()):
            probes.append(asyncio.ensure_future(probe(client[0])))
            del probes[:-1]

    async def on_reconnect() -> None:
        log.info("reconnected to the broker at %s", url)
        if on_link is not None:
            on_link(True)

    while True:
        nc = nats.NATS()
        attempt = asyncio.ensure_future(nc.connect(
            servers=[url], name=name, inbox_prefix=inbox_prefix, allow_reconnect=True,
            max_reconnect_attempts=-1, connect_timeout=2, error_cb=on_error,
            disconnected_cb=on_disconnect, reconnected_cb=on_reconnect, **options))
        try:
            await attempt
            client.append(nc)
            if on_link is not None:
                # kept on the client: it ends when the client closes
                held: Any = nc
                held.aipager_watch = asyncio.ensure_future(watch(nc, on_link))
            return nc
        except asyncio.CancelledError:
            if refused or denied:
                with contextlib.suppress(Exception):
                    await nc.close()  # the half-open client: no socket or task left behind
            if refused:
                raise tls_refusal(url, creds, refused[0]) from refused[0]
            if denied:
                raise refusal(creds.user) from denied[0]
            raise
        except ssl.SSLError as exc:
            raise tls_refusal(url, creds, exc) from exc
        except Exception as exc:  # noqa: BLE001 - any failure: try again
            if is_refusal(exc):
                with contextlib.suppress(Exception):
                    await nc.close()
                raise refusal(creds.user) from exc
            if not told:
                log.warning("cannot reach the broker at %s (%s); trying again", url, exc)
                told = True
            await asyncio.sleep(RETRY_SECONDS)


async def _quiet(_exc: Exception) -> None:
    """A probe's errors are its answer, not news for the log."""


def is_refusal(exc: BaseException | None) -> bool:
    """Whether the broker refused the credential (nats-py says so in two ways: its
    ``AuthorizationError`` on a live connection, the server's words at connecting)."""
    import nats.errors

    return isinstance(exc, nats.errors.AuthorizationError) or (
        exc is not None and "authorization violation" in str(exc).lower())


def refusal(user: str) -> HubRefused:
    return HubRefused(f"revoked: the hub refused this host's credential ({user}), revoked "
                      "or invited again since. Ask for a new invite (aipager hub invite "
                      "NAME on the hub) and join with the new file")


async def watch(nc: Any, on_link: Callable[[bool], Any]) -> None:
    """The link's truth from the broker itself: a round trip (``flush``) every
    ``PING_SECONDS``; ``MAX_PINGS_OUT`` failing in a row make the link lost, one answering
    makes it up again.  nats-py's own pings notice a frozen broker or a partition only when
    its reconnect logic gets round to it (measured: 45 s, or never in a 30 s partition)."""
    failed = 0
    while not nc.is_closed:
        await asyncio.sleep(PING_SECONDS)
        if nc.is_closed:
            return
        try:
            await nc.flush(timeout=PING_SECONDS)
        except Exception:  # noqa: BLE001 - no answer, whatever the reason, is no link
            failed += 1
            if failed == MAX_PINGS_OUT:
                log.warning("the broker did not answer %d pings; the link counts as lost",
                            failed)
                on_link(False)
            continue
        if failed >= MAX_PINGS_OUT and nc.is_connected:
            on_link(True)
        failed = 0


def check_transport(url: str, creds: Creds) -> None:
    """Refuse to talk to a hub on another machine without TLS.

    Raises:
        ConfigError: ``url`` is beyond loopback and ``creds`` carries no hub certificate.
    """
    host = urlsplit(url if "://" in url else f"nats://{url}").hostname or ""
    if creds.ca or tls.is_loopback(host):
        return
    msg = (f"the hub at {url} is on another machine and the credential file has no hub "
           "certificate: the login and every prompt would cross the network unencrypted. "
           "A hub listening beyond loopback uses TLS by itself: invite this host again "
           "there (aipager hub invite NAME) and use the new file")
    raise ConfigError(msg)


def tls_refusal(url: str, creds: Creds, exc: Exception) -> ConfigError:
    """What a failed TLS handshake means, as one clear error."""
    if not creds.ca:
        msg = (f"the hub at {url} requires TLS and the credential file has no hub "
               "certificate: invite this host again on the hub and use the new file")
    else:
        msg = (f"the hub at {url} did not prove it is the hub that invited this host: its "
               f"certificate does not match the credential file ({exc}). Another server, or "
               "the hub's TLS folder was replaced: invite this host again")
    return ConfigError(msg)


async def serve(nc: Any, tasks: set[asyncio.Task], loops: Iterable[Coroutine[Any, Any, Any]]) -> None:
    """Run a link's ``loops`` (kept in ``tasks``) until one fails or they are cancelled; then
    the others are cancelled and the connection ``nc`` closed (``tasks`` is empty again,
    ready for the link's next run)."""
    try:
        for coro in (*loops, _until_closed(nc)):
            tasks.add(asyncio.create_task(coro))
        await asyncio.gather(*tasks)
    finally:
        await cancel_and_wait(tasks)
        tasks.clear()
        await close_quietly(nc)


async def close_quietly(nc: Any) -> None:
    """Close the client, giving up after ``CLOSE_SECONDS``: nats-py's close can wait for ever
    on a reconnect it is in the middle of (seen when the broker refused this credential), and
    the link must go on to say so and try again later."""
    watching = getattr(nc, "aipager_watch", None)
    if watching is not None:
        watching.cancel()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(nc.close(), CLOSE_SECONDS)



async def _until_closed(nc: Any) -> None:
    """Raise once the client closed by itself (the broker refused the credential, or
    closed the connection for good): the link's loops would otherwise go on trying a
    closed client, and ``connected`` would never change."""
    while not nc.is_closed:
        await asyncio.sleep(CLOSED_CHECK)
    exc = getattr(nc, "aipager_refused", None) or nc.last_error
    if is_refusal(exc):
        raise refusal(str(nc.options.get("name") or "aipager"))
    msg = f"the broker closed the connection ({exc or 'no reason given'})"
    raise ConnectionError(msg)
