"""The pure-Python twin of ``aipager-statusline`` (reference for statusline.pxi).

Claude Code runs the status-line command on every redraw with its status JSON
on stdin.  With a valid ``CLAUDE_DTACH_SESSION`` this writes that JSON
atomically (0600) to ``paths.status_file`` (the hook reads ``sl_tokens``
from it) and sends a ``statusline`` datagram; it always prints the terminal
line ``[name] Opus 5.5 | 42% ctx | $1.23``.  A part whose value is null, not
a number or absurd is left out; there is no ``[name]`` without a session.
A status file that cannot be written adds ``"status_file_errno": N`` at the
end of the datagram (the daemon reports it once).
"""

from __future__ import annotations

import os
import time

from aipager.proto import jsonlite, paths, wire
from aipager.hookpy import common, transport

WHO = "aipager-statusline"
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC



def _sanitize(text: str) -> str:
    """Control characters (C0, DEL, C1) and lone surrogates become "?"."""
    return "".join(
        "?" if c < " " or "\x7f" <= c <= "\x9f" or "\ud800" <= c <= "\udfff" else c for c in text
    )


def _number(value) -> float | None:
    """A finite number below 1e15 in size, else None (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    if number != number or not -1e15 < number < 1e15:
        return None
    return number


def render(status: dict, session: str | None) -> str:
    """The terminal status line (without the newline)."""
    parts = []
    label = common.lookup(status, common.STATUS_PATHS["model_name"])
    if not isinstance(label, str) or not label:
        label = common.lookup(status, common.STATUS_PATHS["model_id"])
    if isinstance(label, str) and label:
        parts.append(_sanitize(label))
    pct = _number(common.lookup(status, common.STATUS_PATHS["context_pct"]))
    if pct is not None:
        parts.append(f"{int(pct + 0.5)}% ctx")
    cost = _number(common.lookup(status, common.STATUS_PATHS["cost_usd"]))
    if cost is not None:
        parts.append(f"${cost:.2f}")
    line = " | ".join(parts)
    if session is None:
        return line
    name = session[len(paths.SESSION_PREFIX):] if session.startswith(paths.SESSION_PREFIX) else session
    return f"[{name}] {line}" if line else f"[{name}]"


def datagram(status: dict, session: str) -> dict:
    msg: dict = {"type": wire.STATUSLINE, "session": session}
    for key, path in common.STATUS_PATHS.items():
        msg[key] = common.lookup(status, path)
    return msg


def write_status(env, session: str, raw: bytes, debug: bool) -> int:
    """Atomically replace the session's status file with raw (0600).

    Returns:
        0, or the errno that stopped it (sent to the daemon as
        ``status_file_errno``, which reports it once).
    """
    final = paths.status_file(env, session)
    folder = paths.session_dir(env)
    tmp = os.path.join(folder, f".claude-status-{session}.json.{os.getpid()}.{time.time_ns() % 1000000000}.tmp")
    try:
        fd = os.open(tmp, _TMP_FLAGS, 0o600)
    except OSError as exc:
        common.debug_line(debug, WHO, "cannot write", tmp, exc)
        return exc.errno or 5  # EIO
    try:
        try:
            common.write_all(fd, raw)
        finally:
            os.close(fd)
        os.rename(tmp, final)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return exc.errno or 5  # EIO
    return 0


def main(argv: list[str]) -> int:
    env = os.environ
    debug, session = common.start(env, argv)
    sender = transport.Sender(env, debug, WHO) if session else None
    cap = common.cap_message(session, WHO) if session else b""
    try:
        return _run(common.read_fd(0), session, env, sender, debug)
    except MemoryError:
        if sender is not None:
            sender.send(cap)
        return 1
    except Exception as exc:  # noqa: BLE001 - a status line must never crash
        common.debug_line(debug, WHO, "internal error:", type(exc).__name__, common.error_place(exc))
        if sender is not None and session is not None:
            sender.send(jsonlite.dumps(common.error_message(session, WHO, exc)).encode())
        return 0


def _run(raw: bytes, session: str | None, env, sender, debug: bool) -> int:
    if not raw.strip(common.WS):
        return 0
    try:
        status = jsonlite.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        common.debug_line(debug, WHO, "malformed status JSON")
        return 0
    if not isinstance(status, dict):
        return 0
    line = render(status, session)
    if session is not None and sender is not None:
        msg = datagram(status, session)
        failed = write_status(env, session, raw, debug)
        if failed:
            msg["status_file_errno"] = failed
        data = jsonlite.dumps(msg).encode()
        if len(data) <= wire.MAX_DATAGRAM:
            sender.send(data)
    common.write_all(1, (line + "\n").encode("utf-8", "surrogatepass"))
    return 0
