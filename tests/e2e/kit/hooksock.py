"""A bare datagram socket standing where the daemon's control socket would be.

Scenarios that test the hook itself (not the daemon) bind this at ``<instance>/aipager.sock``
and read every datagram exactly as the hook delivered it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Any, Callable

from aipager.proto import wire

Predicate = Callable[[dict[str, Any]], bool]


class HookSocket:
    """Collects datagrams on a Unix datagram socket from a background thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.raw: list[bytes] = []
        self._cond = threading.Condition()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(path)
        # Generous buffer: a burst of events must not be dropped while the test is busy.
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        self._sock.settimeout(0.2)
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._closed:
            try:
                data = self._sock.recv(wire.MAX_DATAGRAM * 2)
            except TimeoutError:
                continue
            except OSError:
                return
            with self._cond:
                self.raw.append(data)
                self._cond.notify_all()

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every datagram so far, decoded."""
        with self._cond:
            raw = list(self.raw)
        return [json.loads(d) for d in raw]

    def hook_events(self, name: str | None = None) -> list[dict[str, Any]]:
        """Forwarded hook events (those with ``hook_event_name``), optionally of one name."""
        return [
            e for e in self.events
            if "hook_event_name" in e and (name is None or e["hook_event_name"] == name)
        ]

    def names(self) -> list[str]:
        """The ``hook_event_name`` of every forwarded event, in arrival order."""
        return [e["hook_event_name"] for e in self.hook_events()]

    def wait_for(self, pred: Predicate, timeout: float = 30.0, what: str = "") -> dict[str, Any]:
        """The first datagram matching ``pred``; raises AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for data in self.raw[seen:]:
                    event = json.loads(data)
                    if pred(event):
                        return event
                seen = len(self.raw)
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        msg = f"no datagram {what or 'matching'} within {timeout} s; got {self.names()}"
        raise AssertionError(msg)

    def wait_event(self, name: str, timeout: float = 30.0, **fields: Any) -> dict[str, Any]:
        """The first forwarded ``name`` event whose fields equal ``fields``."""

        def pred(e: dict[str, Any]) -> bool:
            return e.get("hook_event_name") == name and all(e.get(k) == v for k, v in fields.items())

        return self.wait_for(pred, timeout, f"{name} {fields or ''}".strip())

    def count(self, pred: Predicate) -> int:
        return sum(1 for e in self.events if pred(e))

    def close(self) -> None:
        self._closed = True
        self._thread.join(2)
        self._sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
