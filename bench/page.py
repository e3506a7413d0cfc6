"""Hook → page: how long after a hook's datagram the page's live stream says something changed.

``python -m bench --only page``.  The real ``aipager start`` (``chatrig.Rig``: the fake Bot
API in a thread, the daemon in its own world) with its page on a free port; the bench signs
in with the one-time link the daemon printed, opens ``/api/events`` as the page does, starts
a session with a task (its card shown), then sends one ``PreToolUse`` datagram at a time and
waits for the stream's next event: from just before ``sendto`` to the event line read
[floor: 50 ms p50, the issue's goal].  The same run reports the card's time to the chat (the
fake Bot API's edit of it) for comparison.
"""

from __future__ import annotations

import http.client
import os
import re
import select
import socket
import statistics
import time

from bench import chatrig

GROUP = "page"
ROUNDS = 30
FLOOR_MS = 50.0


def _link(rig: chatrig.Rig, timeout: float = 20.0) -> tuple[int, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)", rig.tail())
        if found:
            return int(found.group(1)), found.group(2)
        time.sleep(0.1)
    raise RuntimeError(f"the daemon printed no sign-in link:\n{rig.tail()}")


def _sign_in(port: int, token: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", f"/?token={token}", headers={"Host": f"127.0.0.1:{port}"})
    response = conn.getresponse()
    response.read()
    cookie = response.getheader("Set-Cookie") or ""
    conn.close()
    if response.status != 303 or not cookie:
        raise RuntimeError(f"signing in answered {response.status}")
    return cookie.split(";", 1)[0]


class Stream:
    """``/api/events`` read line by line from a raw socket (no buffering between us)."""

    def __init__(self, port: int, cookie: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall((f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                           f"Cookie: {cookie}\r\nOrigin: http://127.0.0.1:{port}\r\n"
                           "Accept: text/event-stream\r\n\r\n").encode())
        self.buf = b""
        self.sock.setblocking(False)

    def next_event(self, timeout: float = 5.0) -> float:
        """The monotonic time the next ``data:`` line arrived."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.buf.find(b"\ndata:")
            if found >= 0 and b"\n" in self.buf[found + 1:]:
                end = self.buf.index(b"\n", found + 1)
                self.buf = self.buf[end:]
                return time.monotonic()
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError("the page's stream said nothing")
            ready, _, _ = select.select([self.sock], [], [], left)
            if ready:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise RuntimeError("the page's stream closed")
                self.buf += chunk

    def drain(self, quiet: float = 0.3) -> None:
        """Read what the stream says until it is quiet for ``quiet`` seconds."""
        while True:
            try:
                self.next_event(quiet)
            except RuntimeError:
                return

    def close(self) -> None:
        self.sock.close()


def run(args) -> list[dict]:
    rounds = max(5, min(ROUNDS, getattr(args, "rounds", ROUNDS)))
    rig = chatrig.Rig(extra_env={"AIPAGER_WEB_PORT": "0"})
    with rig:
        port, token = _link(rig)
        stream = Stream(port, _sign_in(port, token))
        try:
            sess = chatrig.Session(rig, "claude-pagebench")
            sess.start()
            sess.prompt("a long task")
            for i in range(3):  # its card shown: later changes go out with their batch
                sess.pre_tool(f"toolu_warm_{i}", f"ls warm-{i}")
                sess.post_tool(f"toolu_warm_{i}", f"ls warm-{i}", "a\n")
            time.sleep(1.5)
            stream.drain()
            took = []
            for i in range(rounds):
                sent = sess.pre_tool(f"toolu_page_{i}", f"ls page-{i}")
                took.append((stream.next_event() - sent) * 1000)
                sess.post_tool(f"toolu_page_{i}", f"ls page-{i}", "a\n")
                stream.drain(0.15)
            # a new task: its prompt (the task's first card waits for the tick: the chat's
            # calm; the page hears of the prompt itself at once)
            prompted = []
            for i in range(max(5, rounds // 3)):
                sess.stop(f"done {i}")
                stream.drain(0.3)
                sent = sess.prompt(f"task {i}")
                prompted.append((stream.next_event() - sent) * 1000)
                stream.drain(1.2)
        finally:
            stream.close()
    return [_row("hook → page event (card shown)", took),
            _row("hook → page event (a new prompt)", prompted)]


def _row(case: str, took: list[float]) -> dict:
    p50 = statistics.median(took)
    return {"group": GROUP, "case": case, "contender": "aipager", "p50_ms": round(p50, 3),
            "p95_ms": round(sorted(took)[max(0, int(len(took) * 0.95) - 1)], 3),
            "floor_ms": FLOOR_MS, "met": p50 <= FLOOR_MS, "rounds": len(took)}


if __name__ == "__main__":  # pragma: no cover - run through ``python -m bench``
    import argparse

    print(run(argparse.Namespace(rounds=ROUNDS)))
    os._exit(0)
