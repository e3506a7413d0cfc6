"""A host's durable log of records not yet acknowledged by the broker.

Every record a host publishes on ``aipager.<host>.out`` (an output, an answer to
a command) gets the next number of this host's ``epoch`` and is appended to
``outbox.jsonl`` (one ``write``, no fsync: it survives the process, like the
daemon's journal) before anyone tries to publish it.  Its ``Nats-Msg-Id`` is
``<host>:<epoch>:<seq>``, so a publish retried after a lost acknowledgement or a
restart is stored once; the hub skips a number it took already.  When every
record is acknowledged the file is emptied, after ``link.json`` took the
counters.

``link.json`` (0600) also keeps the last journal number of an output taken
(``taken``: a daemon killed hard replays its journal, and an output it made
again is not published twice) and the stream number of the last command the
host started (``cmd_started``: a command redelivered after a restart is not run
again).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections import deque
from typing import Any

import orjson

from aipager.hub import layout
from aipager.proto import fsio

log = logging.getLogger("aipager.hub")


class OutLog:
    """Args:
        meta_path, log_path: ``layout.link_meta`` and ``layout.link_outbox``.
    """

    def __init__(self, meta_path: str, log_path: str) -> None:
        self.meta_path = meta_path
        self.log_path = log_path
        layout.make_private(os.path.dirname(meta_path))
        meta = _read_json(meta_path)
        self.epoch: str = meta.get("epoch") or secrets.token_hex(6)
        self.next_seq: int = int(meta.get("next_seq") or 1)
        self.taken: int = int(meta.get("taken") or 0)
        self.cmd_started: int = int(meta.get("cmd_started") or 0)
        #: (seq, record) not yet acknowledged, oldest first
        self.pending: deque[tuple[int, dict[str, Any]]] = deque()
        for line in _read_lines(log_path):
            seq = line.get("seq")
            if isinstance(seq, int) and isinstance(line.get("rec"), dict):
                self.pending.append((seq, line["rec"]))
                self.next_seq = max(self.next_seq, seq + 1)
                self.taken = max(self.taken, int(line.get("origin") or 0))
        if not meta:
            self.save_meta()
        self._fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                           0o600)

    def append(self, rec: dict[str, Any], origin: int = 0) -> int:
        """Keep ``rec`` until acknowledged; returns its number."""
        seq = self.next_seq
        self.next_seq += 1
        if origin:
            self.taken = origin
        line = orjson.dumps({"seq": seq, "origin": origin, "rec": rec}) + b"\n"
        try:
            os.write(self._fd, line)
        except OSError as exc:
            log.error("cannot keep an output for the hub (%s); it is sent if the link stays up",
                      exc.strerror)
        self.pending.append((seq, rec))
        return seq

    def acked(self, seq: int) -> None:
        """The broker stored record ``seq`` (and, in order, every one before it)."""
        while self.pending and self.pending[0][0] <= seq:
            self.pending.popleft()
        if not self.pending:
            self.save_meta()
            os.ftruncate(self._fd, 0)

    def start_command(self, stream_seq: int) -> bool:
        """Mark command ``stream_seq`` started, durably, before it runs; False when it was
        started before (a redelivery: it must not run twice)."""
        if stream_seq <= self.cmd_started:
            return False
        self.cmd_started = stream_seq
        self.save_meta()
        return True

    def msg_id(self, host: str, seq: int) -> str:
        return f"{host}:{self.epoch}:{seq}"

    def save_meta(self) -> None:
        doc = {"epoch": self.epoch, "next_seq": self.next_seq, "taken": self.taken,
               "cmd_started": self.cmd_started}
        fsio.write_atomic(self.meta_path, json.dumps(doc).encode(), 0o600)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            doc = orjson.loads(fh.read())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _read_lines(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError:
        return []
    out = []
    for line in raw.splitlines():
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a line cut short by a kill: never sent, never acknowledged
        if isinstance(doc, dict):
            out.append(doc)
    return out
