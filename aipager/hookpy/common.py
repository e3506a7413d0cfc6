"""What both twins share: session check, stdin, the memory cap, diagnostics."""

from __future__ import annotations

import posix
import sys

from aipager.proto import wire

#: CLAUDE_DTACH_SESSION characters (_fasthook/paths.pxi session_valid)
_SESSION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_EVENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
WS = b" \t\n\r"
MEMORY_CAP = 1 << 30

#: datagram field -> its path in Claude Code's status JSON (the statusline
#: datagram carries all of them, sl_tokens the wire.SL_TOKEN_KEYS)
STATUS_PATHS = {
    "session_id": ("session_id",),
    "model_name": ("model", "display_name"),
    "model_id": ("model", "id"),
    "context_pct": ("context_window", "used_percentage"),
    "cost_usd": ("cost", "total_cost_usd"),
    "total_input": ("context_window", "total_input_tokens"),
    "total_output": ("context_window", "total_output_tokens"),
    "current_output": ("context_window", "current_usage", "output_tokens"),
    "lines_added": ("cost", "total_lines_added"),
    "lines_removed": ("cost", "total_lines_removed"),
}


def environ():
    """The process environment, str to str, as ``os.environ`` reads it.

    A fresh twin never imports ``os`` (~1.2x python's own start), so it
    decodes ``posix.environ`` the way ``os`` does; once ``os`` is loaded
    (in-process callers, tests that change the environment) its live
    ``os.environ`` is the answer.
    """
    os_mod = sys.modules.get("os")
    if os_mod is not None:
        return os_mod.environ
    enc = sys.getfilesystemencoding()
    return {
        k.decode(enc, "surrogateescape"): v.decode(enc, "surrogateescape")
        for k, v in posix.environ.items()
    }


def lookup(node, path):
    """node[p0][p1]..., None when a step is missing or not an object."""
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def session_valid(session: str | None) -> bool:
    """1-128 of ``[A-Za-z0-9._-]`` and not ``.``/``..``: safe in a file name.

    Checked character by character, so a trailing newline is refused too.
    Wider than the names ``aipager.dtach`` gives out, on purpose: a session an
    older version named ``claude--rf`` still reports.
    """
    return (
        bool(session)
        and len(session) <= 128  # type: ignore[arg-type]
        and session not in (".", "..")
        and _SESSION_CHARS.issuperset(session)  # type: ignore[arg-type]
    )


def env_event_valid(name: str | None) -> bool:
    """``$HOOK_EVENT`` (AX Code): 1-64 of ``[A-Za-z0-9_]``."""
    return bool(name) and len(name) <= 64 and _EVENT_CHARS.issuperset(name)  # type: ignore[arg-type]


def read_fd(fd: int, chunks: list | None = None) -> bytes:
    """Everything until EOF; ``chunks`` keeps what was read if memory runs out."""
    if chunks is None:
        chunks = []
    while True:
        chunk = posix.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def mentions(chunks: list, needle: bytes) -> bool:
    """needle occurs in the concatenated chunks (without joining them)."""
    tail = b""
    for chunk in chunks:
        if needle in tail + chunk[: len(needle)] or needle in chunk:
            return True
        tail = chunk[-len(needle):]
    return False


_NAME_KEY = b'"hook_event_name"'
_PRE_TOOL_USE = b'"PreToolUse"'


def names_pre_tool_use(raw: bytes) -> bool:
    """Byte-level: some ``"hook_event_name"`` in raw is followed (JSON
    whitespace and one colon between) by ``"PreToolUse"``.

    For payloads that cannot be parsed (truncated, garbage, no usable name):
    the PreToolUse check must fail closed on them, so the name is looked for
    in the bytes.  Same scan as forward.pxi names_pre_tool_use.
    """
    n = len(raw)
    i = raw.find(_NAME_KEY)
    while i >= 0:
        j = i + len(_NAME_KEY)
        while j < n and raw[j] in WS:
            j += 1
        if j < n and raw[j] == 58:  # ':'
            j += 1
            while j < n and raw[j] in WS:
                j += 1
            if raw.startswith(_PRE_TOOL_USE, j):
                return True
        i = raw.find(_NAME_KEY, i + 1)
    return False


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[posix.write(fd, view):]


def limit_memory(env) -> None:
    """Lower RLIMIT_AS to 1 GiB (``$AIPAGER_MEMORY_CAP`` bytes overrides it)."""
    cap = MEMORY_CAP
    override = env.get("AIPAGER_MEMORY_CAP", "")
    if override.isdigit() and int(override) > 0:
        cap = int(override)
    try:
        import resource
    except ImportError:  # pragma: no cover - every Linux CPython has it
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def start(env, argv: list[str]) -> tuple[bool, str | None]:
    """Apply the memory cap; the debug flag and the valid session (or None).

    ``--capped`` in argv (stage 2 of the native executable, which set the cap
    already and passed it on) skips importing ``resource``.
    """
    debug = env.get("AIPAGER_DEBUG") == "1"
    if "--capped" not in argv:
        limit_memory(env)
    session = env.get("CLAUDE_DTACH_SESSION")
    return debug, (session if session_valid(session) else None)


def cap_message(session: str, hook: str) -> bytes:
    """The hook_memory_cap_hit datagram, built before the cap can bite."""
    return (
        b'{"type":"' + wire.HOOK_MEMORY_CAP_HIT.encode() + b'","session":"'
        + session.encode() + b'","hook":"' + hook.encode() + b'"}'
    )


def error_place(exc: BaseException) -> str:
    """``aipager/...py:LINE`` of the innermost aipager frame: code, never content."""
    place = "?"
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        cut = name.rfind("/aipager/")
        if cut >= 0:
            place = f"{name[cut + 1:]}:{tb.tb_lineno}"
        tb = tb.tb_next
    return place


def error_message(session: str, hook: str, exc: BaseException) -> dict:
    """report_error: the error kind and the place in aipager's code only."""
    return {
        "type": wire.REPORT_ERROR,
        "where": "hook",
        "hook": hook,
        "kind": type(exc).__name__,
        "place": error_place(exc),
        "session": session,
    }


def debug_line(enabled: bool, who: str, *parts: object) -> None:
    """AIPAGER_DEBUG=1: one diagnostic line on stderr."""
    if enabled:
        posix.write(2, (who + ": " + " ".join(str(p) for p in parts) + "\n").encode("utf-8", "replace"))
