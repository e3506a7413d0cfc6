"""The pure-Python twin of ``aipager-hook`` (reference for _fasthook/forward.pxi).

For an event of a session aipager started (``CLAUDE_DTACH_SESSION``)::

    outcome = hookside.before_forward(name, event, ctx)
    forward event + session + sl_tokens       (never PreModelSwitch)
    PermissionRequest, Elicitation: wait for the chat's answer   (reply.py)
    outcome = hookside.after_forward(name, event, ctx)   (last outcome wins)

The datagram is Claude Code's own text with keys spliced in before the final
``}`` (byte-identical to the compiled hook); an event larger than
wire.MAX_DATAGRAM is re-encoded with its largest strings shortened
(``shrink``).  Bad input exits 0 with nothing sent; an internal error sends
``report_error``; the 1 GiB memory cap sends ``hook_memory_cap_hit``.

``--forwarded`` (from the compiled hook, when its policy_after declined after
sending): run after_forward only.  ``--sock=FD`` (also from the compiled
hook): send through that already connected socket (transport.passed_socket).
"""

from __future__ import annotations

import posix

from aipager.proto import jsonlite, paths, wire
from aipager.hookpy import common, transport
from aipager.policy import hookside

TYPE_CHECKING = False  # typing itself is not imported on the hook's path
if TYPE_CHECKING:
    from aipager.hookpy import reply

WHO = "aipager-hook"
#: status files above this are ignored (no sl_tokens), in both twins
STATUS_MAX = 1 << 20
_STATUS_FLAGS = posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_NONBLOCK | posix.O_CLOEXEC



class Ctx:
    """What a hookside step gets: session, env, send(dict), raw."""

    __slots__ = ("session", "env", "raw", "_sender")

    def __init__(self, session: str, env, raw: bytes, sender: transport.Sender) -> None:
        self.session = session
        self.env = env
        self.raw = raw
        self._sender = sender

    def send(self, msg: dict) -> int:
        """Send one of aipager's own datagrams; never blocks."""
        return self._sender.send(jsonlite.dumps(msg).encode())


def read_status(env, session: str) -> dict | None:
    """The session's status JSON if it is a usable file of ours."""
    try:
        fd = posix.open(paths.status_file(env, session), _STATUS_FLAGS)
    except OSError:
        return None
    try:
        st = posix.fstat(fd)
        if (st.st_mode & 0o170000) != 0o100000 or st.st_uid != posix.geteuid() or st.st_size > STATUS_MAX:
            return None
        data = common.read_fd(fd)
    except OSError:
        return None
    finally:
        posix.close(fd)
    if len(data) > STATUS_MAX:
        return None
    try:
        status = jsonlite.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return status if isinstance(status, dict) else None


def sl_tokens(env, session: str) -> dict | None:
    status = read_status(env, session)
    if status is None:
        return None
    return {key: common.lookup(status, common.STATUS_PATHS[key]) for key in wire.SL_TOKEN_KEYS}


def build_datagram(raw: bytes, event: dict, name: str, from_env: bool, session: str, env,
                   rep: reply.Reply | None = None) -> bytes:
    """event + session (+ sl_tokens, + the reply keys, + hook_event_name from $HOOK_EVENT)."""
    tokens = None if name in wire.NO_SL_TOKENS else sl_tokens(env, session)
    parts = [raw.rstrip(common.WS)[:-1]]
    if event:
        parts.append(b",")
    parts.append(b'"session":"' + session.encode() + b'"')
    if tokens is not None:
        parts.append(b',"sl_tokens":' + jsonlite.dumps(tokens).encode())
    if rep is not None:
        parts.append(rep.fields())
    if from_env:
        parts.append(b',"hook_event_name":"' + name.encode() + b'"')
    parts.append(b"}")
    data = b"".join(parts)
    if len(data) <= wire.MAX_DATAGRAM:
        return data
    from aipager.hookpy import shrink  # only oversized events pay for it

    full = dict(event)
    full["session"] = session
    if tokens is not None:
        full["sl_tokens"] = tokens
    if rep is not None:
        full["aipager_reply_addr"] = rep.path
        full["aipager_request_id"] = rep.request_id
    if from_env:
        full["hook_event_name"] = name
    return shrink.shrink(full)


def _unusable(raw: bytes, env, session: str, sender: transport.Sender, debug: bool, why: str) -> int:
    """A payload no step can use: nothing is sent, and a PreToolUse (named by
    ``$HOOK_EVENT`` or in the raw bytes) fails closed (forward.pxi unusable)."""
    common.debug_line(debug, WHO, why + ", nothing sent")
    if env.get("HOOK_EVENT") != "PreToolUse" and not common.names_pre_tool_use(raw):
        return 0
    return _emit(hookside.unusable_pre_tool_use(Ctx(session, env, raw, sender)), env)


def _emit(outcome, env) -> int:
    """Print a step's outcome; its exit code (0 without one).

    For AX Code a refusal is exit 2 with the reason on stderr, the one form
    both of its hook forms read (``axcode.ax_refusal``)."""
    if outcome is None:
        return 0
    stdout, exit_code = outcome.stdout, outcome.exit_code
    if env.get("HOOK_EVENT"):
        from aipager.hookpy import axcode

        if axcode.ax_invoked(env):
            stdout, stderr, exit_code = axcode.ax_refusal(stdout, exit_code)
            if stderr:
                common.write_all(2, stderr)
    if stdout:
        common.write_all(1, stdout.encode("utf-8", "surrogatepass"))
    return exit_code


def _await_reply(rep: reply.Reply, sent: int, session: str,
                 sender: transport.Sender) -> hookside.Outcome | None:
    """The chat's answer, if the daemon took the event and answered in time."""
    from aipager.hookpy import reply

    if sent != transport.SEND_OK:
        return None  # spooled or dropped: nobody can answer
    out = rep.wait()
    if out is None:
        sender.send(reply.timeout_message(session, rep.request_id))
        return None
    return hookside.Outcome(out)


def main(argv: list[str]) -> int:
    env = common.environ()
    debug, session = common.start(env, argv)
    if session is None:
        common.debug_line(debug, WHO, "no valid CLAUDE_DTACH_SESSION, nothing sent")
        return 0
    sender = transport.Sender(env, debug, WHO, transport.passed_socket(argv))
    cap = common.cap_message(session, WHO)
    chunks: list = []
    try:
        raw = common.read_fd(0, chunks)
        # ax_adapt returns raw unchanged without $HOOK_EVENT: only AX Code loads it
        if env.get("HOOK_EVENT"):
            from aipager.hookpy import axcode

            raw = axcode.ax_adapt(raw, env)  # AX Code's stdin -> Claude Code's event
        return _run(raw, session, env, sender, debug, "--forwarded" in argv)
    except MemoryError:
        sender.send(cap)
        # exit 2 is Claude Code's refusal: use it whenever this may be a PreToolUse
        pre = env.get("HOOK_EVENT") == "PreToolUse" or common.mentions(chunks, b'"PreToolUse"')
        return 2 if pre else 1
    except Exception as exc:  # noqa: BLE001 - the hook must never crash Claude Code
        common.debug_line(debug, WHO, "internal error:", type(exc).__name__, common.error_place(exc))
        sender.send(jsonlite.dumps(common.error_message(session, WHO, exc)).encode())
        return hookside.fail_exit(None)


def _run(raw: bytes, session: str, env, sender: transport.Sender, debug: bool, forwarded: bool) -> int:
    if not raw.strip(common.WS):
        return _unusable(raw, env, session, sender, debug, "empty stdin")
    try:
        event = jsonlite.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return _unusable(raw, env, session, sender, debug, "malformed JSON")
    if not isinstance(event, dict):
        return _unusable(raw, env, session, sender, debug, "not a JSON object")
    name = event.get("hook_event_name")
    from_env = False
    if not isinstance(name, str) or not name:
        name = env.get("HOOK_EVENT")
        if not common.env_event_valid(name):
            return _unusable(raw, env, session, sender, debug, "no hook_event_name")
        from_env = True
    ctx = Ctx(session, env, raw, sender)
    outcome = None
    if not forwarded:
        rep = None
        if name in wire.REPLY_EVENTS:
            from aipager.hookpy import reply  # only these events wait: the others skip its import

            rep = reply.open_reply(env, debug, name) if reply.wanted(name, event) else None
        try:
            datagram = None
            if name not in wire.NOT_FORWARDED:
                datagram = build_datagram(raw, event, name, from_env, session, env, rep)
            outcome = hookside.before_forward(name, event, ctx)
            sent = sender.send(datagram) if datagram is not None else transport.SEND_DROPPED
            if rep is not None:
                outcome = _await_reply(rep, sent, session, sender) or outcome
        finally:
            if rep is not None:
                rep.close()
    after = hookside.after_forward(name, event, ctx)
    return _emit(after if after is not None else outcome, env)
