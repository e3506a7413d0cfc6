"""A PermissionRequest or an Elicitation answered from the chat: the hook's reply wait
(_fasthook/reply.pxi twin).

Two events wait (``open_reply``): a PermissionRequest (the chat's allow/deny)
and an Elicitation (an MCP server's form, filled in on the phone).  For either
the hook binds a fresh datagram socket (0600)
``<control folder>/aipager-reply-<32 hex>.sock``, splices
``"aipager_reply_addr"`` and ``"aipager_request_id"`` (the same 32 hex) into
the forwarded event and, only when that forward was SENT (a daemon that is
down cannot answer), waits for one valid reply of that event's form up to its
deadline (``wait_ms``):

- PermissionRequest: 20 s, ``$AIPAGER_PERMISSION_REPLY_DEADLINE`` seconds, at
  most 120 s;
- Elicitation: 90 s (a form is typed on a phone, not tapped),
  ``$AIPAGER_ELICITATION_REPLY_DEADLINE`` seconds, at most 110 s (Claude Code gives the
  hook 120: the wait always ends first, so the daemon is told and the socket removed).

Both variables read the same grammar (``deadline_ms``); 0 turns that event's
wait off.  A valid reply becomes Claude Code's answer on stdout; a timeout
prints nothing (Claude Code shows its own dialog or form) and tells the daemon
(``permission_reply_timeout``, for both events: it finds the request by its
id) so later taps type keys instead.  The socket file is always removed.

No wait at all (the event is forwarded as before, nothing printed) for
AskUserQuestion (``wanted``), when the deadline is 0, the control folder is not an absolute path of a folder we own,
the socket path is not plain printable ASCII without ``"`` and ``\\`` (it is
spliced into JSON verbatim) or does not fit ``sockaddr_un``, or bind fails.

A reply counts only if it is at most ``REPLY_MAX`` bytes, holds at most
``MAX_BRACKETS`` ``{``/``[`` bytes (keeps both twins' parsers far from their
nesting limits), is strict JSON (no NaN/Infinity), and is an object with
``"v":1``, ``"request_id":<ours>`` and the member of the waiting event's form
(other top-level members are ignored, so a reply of the other form, which
lacks that member, is ignored and the wait goes on):

- PermissionRequest (``decision_output``): ``"decision":{...}`` with
  ``behavior`` "allow"|"deny" and optionally ``updatedInput`` (object: the
  tool input as the person edited it, which the daemon checked against the
  same policy first), ``updatedPermissions`` (list), ``message`` (string),
  ``interrupt`` (bool), nothing else;
- Elicitation (``elicitation_output``): ``"elicitation":{...}`` with
  ``action`` "accept"|"decline"|"cancel" and, only with "accept", optionally
  ``content`` (object: the form's values), nothing else.

Duplicate keys: the last one counts, as for a dict.  Anything else is ignored
and the wait goes on.

Re-encoding, decided here so both twins print the same bytes:

- ``{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{...}}}``
  with the decision rebuilt in the fixed order behavior, updatedInput,
  updatedPermissions, message, interrupt;
- ``{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"<action>"}}``,
  with ``,"content":{...}`` after the action when the reply had content.

behavior, action and interrupt are written as literals, message is its raw
JSON token as received, updatedInput, updatedPermissions and content are their
raw JSON text with the whitespace outside strings removed.  Nothing is decoded
and re-escaped, so the C side copies bytes and never needs Python's float or
string encoder.
"""

from __future__ import annotations

import _json
import posix
import time

from aipager.proto import jsonlite, paths, wire
from aipager.hookpy.common import debug_line

#: the two events that wait (the C side has wire_constants.h's names)
PERMISSION_REQUEST, ELICITATION = wire.REPLY_EVENTS
#: each event's deadline: the variable read, the wait when it is unset or unreadable,
#: what an override is clamped to (0 itself turns the wait off)
PERMISSION_VAR = "AIPAGER_PERMISSION_REPLY_DEADLINE"
DEFAULT_MS = 20000
MAX_MS = 120000
#: a form is typed on a phone: longer than a tap
ELICITATION_VAR = "AIPAGER_ELICITATION_REPLY_DEADLINE"
ELICITATION_DEFAULT_MS = 90000
ELICITATION_MAX_MS = 110000
#: the shortest wait an override gives, for both events
MIN_MS = 10
#: the reply datagram's limits, shared with the daemon's side
REPLY_MAX = wire.REPLY_MAX
MAX_BRACKETS = wire.MAX_BRACKETS
#: sockaddr_un.sun_path holds 107 bytes and the NUL
SUN_PATH_MAX = 107
_WS = " \t\n\r"
_DIR_FLAGS = posix.O_RDONLY | posix.O_DIRECTORY | posix.O_NOFOLLOW | posix.O_CLOEXEC
_PREFIX = (
    '{"hookSpecificOutput":{"hookEventName":"' + PERMISSION_REQUEST + '","decision":{"behavior":"'
)
_DECISION_KEYS = ("behavior", "updatedInput", "updatedPermissions", "message", "interrupt")
_ELICITATION_PREFIX = '{"hookSpecificOutput":{"hookEventName":"' + ELICITATION + '","action":"'
_ACTIONS = ("accept", "decline", "cancel")


def deadline_ms(env, var: str, default: int, maximum: int) -> int:
    """The wait in milliseconds: ``$var`` seconds, else ``default``.

    Only ``DIGITS[.DIGITS]`` is read (up to 9 integer digits; fractions
    beyond milliseconds are cut); anything else means the default.  0 turns
    the reply wait off; other values are clamped to ``MIN_MS``..``maximum``.
    """
    text = env.get(var, "")
    whole, dot, frac = text.partition(".")
    if (not whole or len(whole) > 9 or not whole.isascii() or not whole.isdigit()
            or (dot and (not frac or not frac.isascii() or not frac.isdigit()))):
        return default
    ms = int(whole) * 1000 + int((frac + "000")[:3])
    if ms == 0:
        return 0
    return min(max(ms, MIN_MS), maximum)


def wait_ms(env, event: str) -> int:
    """How long ``event`` (one of ``wire.REPLY_EVENTS``) waits for its reply; 0: no wait."""
    if event == ELICITATION:
        return deadline_ms(env, ELICITATION_VAR, ELICITATION_DEFAULT_MS, ELICITATION_MAX_MS)
    return deadline_ms(env, PERMISSION_VAR, DEFAULT_MS, MAX_MS)


def wanted(name: str, event: dict) -> bool:
    """Whether the event ``name`` gets the reply wait: an Elicitation always, a
    PermissionRequest but for AskUserQuestion, no other event.

    Claude Code runs the hook for AskUserQuestion's PermissionRequest too, but
    its PreToolUse already showed the question and no tap answers it through
    the hook: waiting would only hold back the terminal's picker.
    """
    if name == ELICITATION:
        return True
    return name == PERMISSION_REQUEST and event.get("tool_name") != "AskUserQuestion"


def _no_constant(name: str) -> float:
    # the C scanner rejects NaN/Infinity: so must this twin, or they would disagree
    msg = f"{name} is not JSON"
    raise ValueError(msg)


def _int(text: str) -> int | None:
    # Only "v" is ever read as a number; long digit runs stay unconverted
    # (int() refuses > 4300 digits, which the C side would accept).
    return int(text) if len(text) <= 20 else None


class _Strict(jsonlite._Context):
    parse_constant = staticmethod(_no_constant)
    parse_int = staticmethod(_int)


# typeshed declares the context as a make_scanner; _json reads only its attributes
_scan_once = _json.make_scanner(_Strict())  # type: ignore[arg-type]


def _scan(text: str, i: int):
    try:
        return _scan_once(text, i)
    except (StopIteration, SystemError):
        # see jsonlite.loads: without json.decoder loaded a syntax error is a SystemError
        msg = f"no JSON value at {i}"
        raise ValueError(msg) from None


def _ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def _members(text: str, i: int) -> tuple[dict, int]:
    """The object at ``text[i]``: key -> (value, start, end) (the last of
    duplicate keys wins), and the index past it.

    Raises:
        ValueError: not a JSON object there.
    """
    n = len(text)
    if i >= n or text[i] != "{":
        msg = "not an object"
        raise ValueError(msg)
    members: dict = {}
    i = _ws(text, i + 1)
    if i < n and text[i] == "}":
        return members, i + 1
    while True:
        if i >= n or text[i] != '"':
            msg = "key expected"
            raise ValueError(msg)
        key, i = _scan(text, i)
        i = _ws(text, i)
        if i >= n or text[i] != ":":
            msg = "colon expected"
            raise ValueError(msg)
        start = _ws(text, i + 1)
        value, i = _scan(text, start)
        members[key] = (value, start, i)
        i = _ws(text, i)
        if i < n and text[i] == ",":
            i = _ws(text, i + 1)
            continue
        if i < n and text[i] == "}":
            return members, i + 1
        msg = "comma or brace expected"
        raise ValueError(msg)


def compact(text: str) -> str:
    """JSON text without the whitespace outside strings (reply.pxi put_compact)."""
    if not any(c in text for c in _WS):
        return text
    out = []
    in_str = esc = False
    for c in text:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c in _WS:
            continue
        elif c == '"':
            in_str = True
        out.append(c)
    return "".join(out)


def _answer(data: bytes, request_id: str, key: str) -> tuple[str, dict] | None:
    """The reply's text and the members of its object ``key`` (as ``_members``), if
    ``data`` is a well-formed reply to ``request_id`` holding one; else None.

    The checks both forms share: size, brackets, strict JSON, ``"v":1``, our
    request id.  Other top-level members are not looked at (a reply of the other
    form lacks ``key``, and so is ignored).
    """
    if len(data) > REPLY_MAX or data.count(b"{") + data.count(b"[") > MAX_BRACKETS:
        return None
    try:
        text = data.decode("utf-8")
        start = _ws(text, 0)
        top, end = _members(text, start)
        if _ws(text, end) != len(text):
            return None
        v = top.get("v")
        rid = top.get("request_id")
        body = top.get(key)
        if v is None or type(v[0]) is not int or v[0] != 1:
            return None
        if rid is None or rid[0] != request_id or body is None or type(body[0]) is not dict:
            return None
        fields, _ = _members(text, body[1])
    except (ValueError, RecursionError):
        return None
    return text, fields


def decision_output(data: bytes, request_id: str) -> str | None:
    """A PermissionRequest's stdout for a valid reply to ``request_id``, else None (see the module doc)."""
    found = _answer(data, request_id, "decision")
    if found is None:
        return None
    text, fields = found
    if any(key not in _DECISION_KEYS for key in fields):
        return None
    behavior = fields.get("behavior")
    if behavior is None or type(behavior[0]) is not str or behavior[0] not in ("allow", "deny"):
        return None
    edited = fields.get("updatedInput")
    perms = fields.get("updatedPermissions")
    message = fields.get("message")
    interrupt = fields.get("interrupt")
    if ((edited is not None and type(edited[0]) is not dict)
            or (perms is not None and type(perms[0]) is not list)
            or (message is not None and type(message[0]) is not str)
            or (interrupt is not None and type(interrupt[0]) is not bool)):
        return None
    parts = [_PREFIX, behavior[0], '"']
    if edited is not None:
        parts.append(',"updatedInput":' + compact(text[edited[1]:edited[2]]))
    if perms is not None:
        parts.append(',"updatedPermissions":' + compact(text[perms[1]:perms[2]]))
    if message is not None:
        parts.append(',"message":' + text[message[1]:message[2]])
    if interrupt is not None:
        parts.append(',"interrupt":true' if interrupt[0] else ',"interrupt":false')
    parts.append("}}}")
    return "".join(parts)


def elicitation_output(data: bytes, request_id: str) -> str | None:
    """An Elicitation's stdout for a valid reply to ``request_id``, else None (see the module doc)."""
    found = _answer(data, request_id, "elicitation")
    if found is None:
        return None
    text, fields = found
    if any(key not in ("action", "content") for key in fields):
        return None
    action = fields.get("action")
    if action is None or type(action[0]) is not str or action[0] not in _ACTIONS:
        return None
    content = fields.get("content")
    if content is None:
        return _ELICITATION_PREFIX + action[0] + '"}}'
    # values only come with an accepted form: a declined one carrying them is malformed
    if type(content[0]) is not dict or action[0] != "accept":
        return None
    return _ELICITATION_PREFIX + action[0] + '","content":' + compact(text[content[1]:content[2]]) + "}}"


def _usable_path(path: str) -> bool:
    return (len(path) <= SUN_PATH_MAX and path.isascii() and path.isprintable()
            and '"' not in path and "\\" not in path)


class Reply:
    """One bound reply socket for the event ``name``, waiting ``ms``; ``close`` removes it."""

    __slots__ = ("path", "request_id", "sock", "debug", "name", "ms")

    def __init__(self, path: str, request_id: str, sock, debug: bool, name: str, ms: int) -> None:
        self.path = path
        self.request_id = request_id
        self.sock = sock
        self.debug = debug
        self.name = name
        self.ms = ms

    def fields(self) -> bytes:
        """What the forwarded datagram gets spliced in (plain ASCII, see _usable_path)."""
        return (b',"aipager_reply_addr":"' + self.path.encode() + b'","aipager_request_id":"'
                + self.request_id.encode() + b'"')

    def wait(self) -> str | None:
        """The first valid reply's output within ``ms`` milliseconds, else None.

        Only a reply of this event's form counts (``decision_output`` or
        ``elicitation_output``).  At the deadline, replies already queued are
        still read (without waiting): a tap that arrived just in time is not
        lost to the clock.
        """
        output = elicitation_output if self.name == ELICITATION else decision_output
        end = time.monotonic() + self.ms / 1000
        while True:
            left = end - time.monotonic()
            if left <= 0:
                self.sock.setblocking(False)
            else:
                self.sock.settimeout(left)
            try:
                data = self.sock.recv(REPLY_MAX + 1)
            except TimeoutError:
                continue  # the loop head reads what is queued, then gives up
            except OSError:  # BlockingIOError at the deadline: nothing queued
                return None
            out = output(data, self.request_id)
            if out is not None:
                return out
            debug_line(self.debug, "aipager-hook", "reply ignored:", len(data), "bytes")

    def close(self) -> None:
        self.sock.close()
        try:
            posix.unlink(self.path)
        except OSError:
            pass


def open_reply(env, debug: bool, name: str) -> Reply | None:
    """Bind a fresh reply socket for the event ``name``, or None when the wait cannot
    happen (see the module doc)."""
    ms = wait_ms(env, name)
    if ms == 0:
        return None
    folder = paths.control_dir(env)
    if not folder.startswith("/"):
        return None
    try:
        dfd = posix.open(folder, _DIR_FLAGS)
    except OSError:
        debug_line(debug, "aipager-hook", "no reply folder:", folder)
        return None
    try:
        if posix.fstat(dfd).st_uid != posix.geteuid():
            debug_line(debug, "aipager-hook", "reply folder not ours:", folder)
            return None
    finally:
        posix.close(dfd)
    request_id = posix.urandom(16).hex()
    path = paths.reply_socket(env, request_id)
    if not _usable_path(path):
        debug_line(debug, "aipager-hook", "reply socket path unusable:", path)
        return None
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM | _socket.SOCK_CLOEXEC)
    old = posix.umask(0o177)  # the socket file is born 0600: only we may answer
    try:
        sock.bind(path)
    except OSError:
        sock.close()
        debug_line(debug, "aipager-hook", "cannot bind the reply socket:", path)
        return None
    finally:
        posix.umask(old)
    return Reply(path, request_id, sock, debug, name, ms)


def timeout_message(session: str, request_id: str) -> bytes:
    """permission_reply_timeout, for either event: the daemon finds the request by its
    id and clears the reply address (taps type keys)."""
    return (b'{"hook_event_name":"' + wire.PERMISSION_REPLY_TIMEOUT.encode() + b'","session":"'
            + session.encode() + b'","aipager_request_id":"' + request_id.encode() + b'"}')
