"""A fake daemon for the reply wait of PermissionRequest and Elicitation
(tests/hook/test_permission_reply*.py, test_elicitation_reply.py, test_cases.py).

``run_hook`` starts the hook (native or twin), reads the event it forwards to
the ``Receiver`` and answers on the event's ``aipager_reply_addr``.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Callable

import pytest
from support import hookrun

from aipager.hookpy import reply as hook_reply
from aipager.proto import paths

EVENTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "events")
SESSION = "claude-jim"
OUT = b'{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":'
#: an Elicitation's stdout up to its action
ELICIT_OUT = b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":'


@pytest.fixture(autouse=True)
def short_instance_dir(monkeypatch):
    """A short control folder: ``aipager-reply-<32 hex>.sock`` takes 51 of sun_path's 107 bytes,
    and pytest's tmp folders can leave fewer (the hook then does not wait, by design)."""
    folder = tempfile.mkdtemp(prefix="apr", dir="/tmp")
    monkeypatch.setenv("AIPAGER_INSTANCE_DIR", folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def event_bytes(name: str = "PermissionRequest") -> bytes:
    """The recorded event ``name`` (tests/fixtures/events), as Claude Code sends it."""
    with open(os.path.join(EVENTS, f"{name}.json"), "rb") as fh:
        return json.dumps(json.load(fh)).encode()


def elicitation_bytes() -> bytes:
    """The Elicitation the real Claude Code 2.1.328 sent for an MCP server's form."""
    return event_bytes("Elicitation")


def reply(rid: str, decision: dict, **extra) -> bytes:
    return json.dumps({"v": 1, "request_id": rid, "decision": decision, **extra}).encode()


def elicit(rid: str, answer, **extra) -> bytes:
    """An Elicitation's reply: ``answer`` is the "elicitation" object (anything, for bad forms)."""
    return json.dumps({"v": 1, "request_id": rid, "elicitation": answer, **extra}).encode()


@dataclass
class Run:
    exit: int
    stdout: bytes
    stderr: bytes
    forwarded: dict | None = None
    forwarded_raw: bytes = b""
    after: list = field(default_factory=list)
    after_raw: list = field(default_factory=list)


def run_hook(kind: str, env: dict, answer: Callable[[dict], list[bytes]] | None,
             receiver: hookrun.Receiver | None, timeout: float = 20, stdin: bytes | None = None,
             prefix: tuple[str, ...] = (), cmd: list[str] | None = None) -> Run:
    """Start the hook (after ``prefix``, e.g. setpriv; ``cmd`` instead of ``kind``'s),
    answer its forwarded event with ``answer(event)``'s datagrams."""
    cmd = cmd or hookrun.contender_cmd(kind, "hook")
    proc = subprocess.Popen([*prefix, *cmd], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        proc.stdin.write(event_bytes() if stdin is None else stdin)
        proc.stdin.close()
        forwarded = None
        raw = b""
        if receiver is not None:
            receiver.sock.settimeout(timeout)
            raw = receiver.sock.recv(1 << 20)
            receiver.sock.setblocking(False)
            forwarded = json.loads(raw)
            if answer is not None:
                client = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                try:
                    for data in answer(forwarded):
                        try:
                            client.sendto(data, forwarded["aipager_reply_addr"])
                        except (FileNotFoundError, ConnectionRefusedError):
                            break  # an earlier datagram was taken: the hook is gone
                finally:
                    client.close()
        proc.wait(timeout)
        stdout, stderr = proc.stdout.read(), proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    after_raw = receiver.drain_raw() if receiver is not None else []
    return Run(proc.returncode, stdout, stderr, forwarded, raw, [json.loads(d) for d in after_raw], after_raw)


def no_reply_sockets(env: dict) -> bool:
    return not glob.glob(os.path.join(paths.control_dir(env), paths.REPLY_PREFIX + "*"))


def env_with(deadline: str | None = "5", var: str = hook_reply.PERMISSION_VAR, **extra: str | None) -> dict:
    """The hook's environment with ``$var`` (the deadline variable of the event under test;
    None: unset)."""
    return hookrun.hook_env(**{var: deadline}, **extra)


def answered(kind: str, answer: Callable[[dict], list[bytes]], deadline: str | None = "5",
             stdin: bytes | None = None, var: str = hook_reply.PERMISSION_VAR, **extra_env: str | None) -> Run:
    env = env_with(deadline, var, **extra_env)
    receiver = hookrun.receiver_for(env)
    try:
        done = run_hook(kind, env, answer, receiver, stdin=stdin)
    finally:
        receiver.close()
    assert b"Traceback" not in done.stderr, done.stderr
    assert no_reply_sockets(env)
    return done
