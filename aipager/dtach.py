"""Claude Code sessions in dtach: create, attach, list, kill, type into.

A session ``claude-NAME`` is a dtach master on ``paths.dtach_socket(env, NAME)``
running Claude Code with ``CLAUDE_DTACH_SESSION=claude-NAME`` in its
environment (the hook reads it to name the session).  dtach comes from the
``dtach-bin`` package, so nothing needs a system install.

The argv builders (``create_argv``, ``attach_argv``, ``push_argv``) and
``typing_writes`` are public so the daemon can run the same commands with
asyncio; the functions below them are the synchronous API the CLI uses.

A socket is typed into, attached to or even probed only when it is a socket
of our own uid (``aipager.proto.trust``): another user may have created
``claude-dtach-NAME.sock`` in a shared folder.  Such a socket is listed with
its ``problem`` and refused with ``UnsafePath``, never used nor removed.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

from aipager.agents import CLAUDE, Agent
from aipager.proto import paths, trust
from aipager.proto.errors import AipagerError, InvalidSessionName, SessionError, SessionNotFound

#: detach key for attached terminals: Ctrl-\ (dtach's ``-e`` notation)
DETACH_KEY = "^\\"
ENTER = b"\r"
#: how long ``dtach -p`` may take before we give up on a session
PUSH_TIMEOUT = 5.0

# Every name pattern is used with fullmatch: `$` also matches before a final
# newline, and "abc\n" once became a session nothing could list or end.
#: a name older versions gave out: ASCII letters, digits, '_', '-'
_ANY_NAME = r"[A-Za-z0-9_-]{1,64}"
#: a name for a new session: the same, but no leading '-' (it would read as an
#: option: `aipager session kill -rf`)
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")
#: an existing session keeps the name an older version gave it: it stays listed,
#: reachable and killable (`aipager session kill -- -rf`)
_EXISTING_NAME_RE = re.compile(_ANY_NAME)
#: a session's socket: only names some version could create are sessions
_SOCKET_RE = re.compile(rf"claude-dtach-({_ANY_NAME})\.sock")


@dataclass(frozen=True)
class SessionInfo:
    """One dtach socket found in the session folder."""

    name: str  # what the user typed: "x1"
    session: str  # the internal name: "claude-x1"
    socket: str
    live: bool
    #: why the socket is not used (another user's, a symlink); it is then never live
    problem: str | None = None

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {"name": self.name, "session": self.session,
                                  "socket": self.socket, "live": self.live}
        if self.problem:
            doc["problem"] = self.problem
        return doc


# ---------------------------------------------------------------- names


def check_name(name: str) -> str:
    """Return the bare name for a new session (``x1`` for ``x1`` or ``claude-x1``).

    Raises:
        InvalidSessionName: empty, longer than 64, not ASCII letters, digits,
            ``-``, ``_``, or starting with ``-``.
    """
    bare = _bare(name)
    if _NAME_RE.fullmatch(bare):
        return bare
    if _EXISTING_NAME_RE.fullmatch(bare):
        msg = f"invalid session name {name!r}: a name may not start with '-' (for example: api-fix)"
        raise InvalidSessionName(msg)
    raise InvalidSessionName(_invalid(name))


def existing_name(name: str) -> str:
    """Return the bare name of a session that may exist already.

    Unlike ``check_name`` this accepts a leading ``-``: older versions gave out
    such names, and those sessions must still be attached to and ended.

    Raises:
        InvalidSessionName: a name no version could have created.
    """
    bare = _bare(name)
    if not _EXISTING_NAME_RE.fullmatch(bare):
        raise InvalidSessionName(_invalid(name))
    return bare


def _bare(name: str) -> str:
    return name[len(paths.SESSION_PREFIX):] if name.startswith(paths.SESSION_PREFIX) else name


def _invalid(name: str) -> str:
    # !r: a newline or other control character shows escaped, so this stays one line
    # a–z only: a session is also the chat command /NAME, which Telegram allows in ASCII only
    return (f"invalid session name {name!r}: use 1-64 letters a-z (no accents), digits, '-' "
            "or '_' (for example: api-fix or x1)")


def session_name(name: str) -> str:
    """The internal name ``claude-NAME`` for a (validated) name."""
    return paths.SESSION_PREFIX + check_name(name)


# ---------------------------------------------------------------- programs


def dtach_binary(env: Mapping[str, str] | None = None) -> str:
    """Absolute path of dtach: the one ``dtach-bin`` installed, else ``PATH``.

    Raises:
        SessionError: no dtach anywhere.
    """
    env = os.environ if env is None else env
    explicit = env.get("AIPAGER_DTACH_BIN")
    if explicit:
        return explicit
    # dtach-bin drops its binary in the environment's bin folder; asking the
    # package keeps working for pipx/uv layouts where that folder isn't on PATH.
    try:
        import dtach_bin

        return dtach_bin.path()
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("dtach", path=env.get("PATH"))
    if found:
        return found
    msg = "dtach not found: reinstall aipager (it brings dtach-bin) or install dtach"
    raise SessionError(msg)


def claude_binary(env: Mapping[str, str] | None = None, claude_path: str | None = None) -> str:
    """The Claude Code program: ``AIPAGER_CLAUDE_BIN``, config ``claude_path``, ``PATH``.

    Args:
        env: environment to read (default ``os.environ``).
        claude_path: the config's ``claude_path``; read from the config file
            when None (a missing or broken config is ignored here).

    Raises:
        SessionError: Claude Code was not found.
    """
    env = os.environ if env is None else env
    explicit = env.get("AIPAGER_CLAUDE_BIN")
    if explicit:
        return explicit
    if claude_path is None:
        claude_path = _configured_claude(env)
    if claude_path:
        return claude_path
    found = shutil.which("claude", path=env.get("PATH"))
    if found:
        return found
    msg = ("Claude Code (`claude`) not found on PATH; install it or pin it with "
           "`aipager config claude-path PATH`")
    raise SessionError(msg)


def _configured_claude(env: Mapping[str, str]) -> str | None:
    from aipager import config

    try:
        return config.load(env).claude_path
    except AipagerError:
        return None


# ---------------------------------------------------------------- argv builders


def create_argv(dtach: str, socket_path: str, program: Sequence[str]) -> list[str]:
    """``dtach -n``: create the session detached, running ``program``."""
    # -z: Ctrl-Z goes to Claude Code instead of suspending the dtach client.
    return [dtach, "-n", socket_path, "-z", *program]


def attach_argv(dtach: str, socket_path: str) -> list[str]:
    """``dtach -a``: attach this terminal; Ctrl-\\ detaches, WINCH forces a redraw."""
    return [dtach, "-a", socket_path, "-e", DETACH_KEY, "-r", "winch", "-z"]


def push_argv(dtach: str, socket_path: str) -> list[str]:
    """``dtach -p``: copy stdin into the session as if typed."""
    return [dtach, "-p", socket_path]


def session_env(base: Mapping[str, str], name: str) -> dict[str, str]:
    """The environment Claude Code runs with inside session ``name``."""
    env = dict(base)
    env["CLAUDE_DTACH_SESSION"] = session_name(name)
    # Claude Code (2.1.301+) offers its SendUserFile tool only with this set:
    # the files it sends reach the chat.
    env.setdefault("CLAUDE_CODE_ATTACHMENTS_BY_PATH", "1")
    # A session started from inside Claude Code must not think it is nested.
    env.pop("CLAUDECODE", None)
    return env


def typing_writes(text: str) -> list[tuple[bytes, float]]:
    """The writes that type ``text`` and press Enter: ``[(bytes, pause_after)]``.

    Text and Enter are separate writes with a pause between them: Claude Code
    treats a burst that ends in CR as a paste and would keep the CR as a
    newline inside the prompt instead of submitting it.
    """
    data = text.encode("utf-8")
    # Longer text takes the TUI longer to draw before it reads the Enter.
    gap = min(0.5, 0.15 + 0.003 * len(text))
    return [(data, gap), (ENTER, 0.0)] if data else [(ENTER, 0.0)]


#: xterm's bracketed paste: Claude Code takes what is between them as text
PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"


def paste_writes(text: str) -> list[tuple[bytes, float]]:
    """The writes that put ``text`` into the input box as one bracketed paste and
    press Enter: any length arrives whole and exact (Claude Code 2.1.328 hands a
    long paste to the hooks inside ``<pasted_content>`` tags), where typed text
    over about 1,000 characters was split between keys and a paste.

    Raises:
        ValueError: ``text`` holds an escape byte (it could end the paste early
            and press keys): clean it first (``policy.chatprompt.clean``).
    """
    if "\x1b" in text:
        msg = "pasted text may not hold escape bytes"
        raise ValueError(msg)
    data = text.encode("utf-8")
    # A longer paste takes the TUI longer to take in before it reads the Enter.
    gap = min(1.0, 0.25 + len(data) / 10_000)
    return [(PASTE_START + data + PASTE_END, gap), (ENTER, 0.0)]


#: what empties Claude Code's input box, without touching a running task (Esc or Ctrl-C
#: would stop it).  Ctrl-U deletes to the start of the line only (a collapsed paste is one
#: line), so each line is taken with Ctrl-U and the line break before it with Backspace:
#: one write, which 2.1.328 reads as keys (tests/e2e/test_chat_is_a_prompt.py: a message of
#: three lines left in the box, then another sent, arrives alone).  Extra keys on an empty
#: box do nothing.
CLEAR_LINES = 8
CLEAR_INPUT = b"\x15\x7f" * CLEAR_LINES + b"\x15"


# ---------------------------------------------------------------- liveness


def is_live(socket_path: str) -> bool:
    """Whether a dtach master of ours answers on ``socket_path``.

    A socket that is not ours (or a symlink) is never connected to: False.
    """
    try:
        st = os.lstat(socket_path)
    except OSError:
        return False
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        return False
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(socket_path)
    except OSError:
        return False
    finally:
        sock.close()
    return True


def list_sessions(env: Mapping[str, str], clean: bool = False) -> list[SessionInfo]:
    """Every ``claude-dtach-*.sock`` in the session folder, sorted by name.

    Args:
        env: environment deciding the session folder.
        clean: remove stale sockets (nobody answers) and leave them out.
    """
    folder = paths.session_dir(env)
    if folder == paths.private_dir() and trust.private_dir_finding(folder) is not None:
        return []  # not ours: nothing in it is trusted (`aipager doctor` says why)
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for entry in entries:
        match = _SOCKET_RE.fullmatch(entry)
        if not match:
            continue
        name = match.group(1)
        sock = os.path.join(folder, entry)
        problem = trust.socket_finding(sock, "session socket")
        if problem is not None:
            found.append(SessionInfo(name, paths.SESSION_PREFIX + name, sock, False, str(problem)))
            continue
        live = is_live(sock)
        if not live and clean:
            _unlink(sock)
            continue
        found.append(SessionInfo(name, paths.SESSION_PREFIX + name, sock, live))
    return found


# ---------------------------------------------------------------- sync API


def create(
    env: Mapping[str, str],
    name: str,
    args: Sequence[str] = (),
    cwd: str | None = None,
    program: Sequence[str] | None = None,
    wait: float = 3.0,
    agent: Agent = CLAUDE,
) -> str:
    """Start session ``name`` detached, running ``agent`` (Claude Code) in ``cwd``.

    Args:
        env: environment for paths and for the session itself.
        name: the session name (validated).
        args: extra arguments for the agent (``Agent.args`` adds what every session gets).
        cwd: working folder (default: the current one).
        program: the command to run instead of the agent's.
        wait: seconds to wait for the socket to answer.

    Returns:
        The socket path.

    Raises:
        InvalidSessionName: bad name.
        SessionError: the session is already live, or dtach failed to start it.
        UnsafePath: the session folder or a socket at the name is another user's.
    """
    name = check_name(name)
    from aipager.chatcommands import RESERVED

    if name.lower() in RESERVED:
        # /NAME addresses a session from the chat: this one could never be addressed
        msg = f"{name} is the name of a chat command; pick another name"
        raise InvalidSessionName(msg)
    sock = paths.dtach_socket(env, name)
    trust.make_folder(os.path.dirname(sock))
    trust.require_own_socket(sock, "session socket")
    if is_live(sock):
        msg = f"session {name} is already running; attach with `aipager session {name}`"
        raise SessionError(msg)
    _unlink(sock)  # stale: dtach refuses to create over an existing file
    # Notes and typing marks of an earlier process at this name: none of its
    # messages can be taken now, so none may restrict (or name) the new one's tasks.
    from aipager.policy import notes
    from aipager.proto import fsio

    notes.clear_all(env, session_name(name))
    fsio.unlink_quiet(paths.typing_mark(env, session_name(name)))
    binary = claude_binary(env) if agent is CLAUDE else agent.binary(env)
    command = list(program) if program is not None else [binary, *agent.args(args)]
    argv = create_argv(dtach_binary(env), sock, command)
    proc = subprocess.run(
        argv, env=session_env(env, name), cwd=cwd or os.getcwd(),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        msg = f"dtach could not start session {name}: {proc.stderr.strip() or proc.returncode}"
        raise SessionError(msg)
    deadline = time.monotonic() + wait
    while not is_live(sock):
        if time.monotonic() > deadline:
            msg = f"session {name} did not come up (no answer on {sock})"
            raise SessionError(msg)
        time.sleep(0.02)
    return sock


def session_pids(socket_path: str) -> Iterator[int]:
    """The processes behind a session's socket: below its dtach master (the program it
    runs and what that started), master by master, in pid order (Linux /proc; a walk of
    every process: called off the event loop)."""
    for master in socket_holders(socket_path):
        yield from sorted(descendants({master}) - {master})


def agent_of(socket_path: str) -> Agent | None:
    """The agent running behind a session's socket, read from its processes' command
    lines, or None."""
    from aipager.agents import of_command

    for pid in session_pids(socket_path):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = fh.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        found = of_command(argv)
        if found is not None:
            return found
    return None


def attach(env: Mapping[str, str], name: str) -> int:
    """Attach this terminal to live session ``name``; return dtach's exit code.

    Raises:
        SessionNotFound: nothing answers on the session's socket.
        UnsafePath: the socket is another user's or a symlink.
    """
    sock = _live_socket(env, name)
    return subprocess.call(attach_argv(dtach_binary(env), sock))


def type_text(env: Mapping[str, str], name: str, text: str, timeout: float = PUSH_TIMEOUT) -> None:
    """Type ``text`` into session ``name`` and press Enter.

    Raises:
        SessionNotFound: the session is not live.
        SessionError: dtach failed or took longer than ``timeout``.
        UnsafePath: the socket is another user's or a symlink.
    """
    sock = _live_socket(env, name)
    proc = subprocess.Popen(
        push_argv(dtach_binary(env), sock), stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    try:
        for data, pause in typing_writes(text):
            # One os.write per chunk: dtach -p forwards each read as one packet.
            os.write(proc.stdin.fileno(), data)
            if pause:
                time.sleep(pause)
        proc.stdin.close()
        proc.wait(timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        proc.kill()
        proc.wait()
        msg = f"typing into session {name} failed: {exc}"
        raise SessionError(msg) from exc
    finally:
        err = proc.stderr.read() if proc.stderr else b""
        if proc.stderr:
            proc.stderr.close()
    if proc.returncode != 0:
        detail = err.decode(errors="replace").strip()
        msg = f"typing into session {name} failed: {detail or proc.returncode}"
        raise SessionError(msg)


def kill(env: Mapping[str, str], name: str, grace: float = 3.0) -> bool:
    """End session ``name``: SIGTERM its dtach master, SIGKILL after ``grace``.

    Returns:
        True if a live session was ended, False if there was only a stale
        socket (removed) or nothing.

    Raises:
        InvalidSessionName: a name no version could have created.
        UnsafePath: the socket at the name is another user's (left alone).
    """
    name = existing_name(name)
    sock = paths.dtach_socket(env, name)
    trust.require_own_socket(sock, "session socket")
    if not is_live(sock):
        _unlink(sock)
        return False
    # Only the master and its own tree: another session (or another test run)
    # may use the same name in a different folder.
    pids = descendants(socket_holders(sock))
    pids.discard(os.getpid())
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if alive(pid):
            _signal(pid, signal.SIGKILL)
    _unlink(sock)
    return True


def socket_holders(socket_path: str) -> set[int]:
    """PIDs with the listening Unix socket bound at ``socket_path`` open (Linux /proc)."""
    inodes = set()
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as fh:
            next(fh, None)
            for line in fh:
                parts = line.split()
                if len(parts) >= 8 and parts[7] == socket_path:
                    inodes.add(f"socket:[{parts[6]}]")
    except OSError:
        return set()
    return {pid for pid in _own_pids() if inodes & fd_targets(pid)}


def descendants(pids: set[int]) -> set[int]:
    """``pids`` and every process below them (Claude Code and what it started)."""
    children: dict[int, list[int]] = {}
    for pid in _own_pids():
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), list(pids)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


# ---------------------------------------------------------------- helpers


def _live_socket(env: Mapping[str, str], name: str) -> str:
    name = existing_name(name)
    sock = paths.dtach_socket(env, name)
    # before anything connects: a foreign socket is reported, never typed into or attached
    trust.require_own_socket(sock, "session socket")
    if not is_live(sock):
        msg = f"no running session {name}"
        if _NAME_RE.fullmatch(name):  # an older name ("-rf") cannot be started again
            msg += f"; start it with `aipager session {name}`"
        raise SessionNotFound(msg)
    return sock


def _own_pids() -> list[int]:
    uid = os.getuid()
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    pids.append(int(entry))
            except OSError:
                continue
    return pids


def fd_targets(pid: int) -> set[str]:
    """What the open descriptors of ``pid`` point at (empty when unreadable)."""
    folder = f"/proc/{pid}/fd"
    targets = set()
    try:
        for fd in os.listdir(folder):
            try:
                targets.add(os.readlink(os.path.join(folder, fd)))
            except OSError:
                continue
    except OSError:
        pass
    return targets


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); it is dead for our purpose.
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError as exc:
        if exc.errno != errno.ESRCH:
            print(f"aipager: cannot signal {pid}: {exc.strerror}", file=sys.stderr)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def attached_clients(socket_paths: Iterable[str], table: str = "/proc/net/unix") -> dict[str, int]:
    """How many clients are connected to each dtach socket (an attached terminal, or a
    short ``dtach -p`` push): the connected sockets the kernel lists under that path.
    Unknown (no such table) counts as none."""
    wanted = {p: 0 for p in socket_paths}
    try:
        with open(table, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                # Num RefCount Protocol Flags Type St Inode Path; St 03: connected
                if len(parts) >= 8 and parts[5] == "03" and parts[7] in wanted:
                    wanted[parts[7]] += 1
    except OSError:
        pass
    return wanted


# -- who is connected, from the kernel's socket diagnostics ------------------------------------

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST_DUMP = 0x1 | 0x300
_NLMSG_DONE, _NLMSG_ERROR = 3, 2
_TCP_ESTABLISHED = 1
_UDIAG_SHOW_NAME = 0x1
_UNIX_DIAG_NAME, _UNIX_DIAG_SHUTDOWN = 0, 6


def connected_clients(socket_paths: Iterable[str]) -> dict[str, int] | None:
    """How many clients are connected to each dtach socket *and still there*: the master's
    ends of the connections whose other end is open (``sock_diag``: an end whose peer has
    closed carries a shutdown mask).  A liveness probe or a ``dtach -p`` that has finished is
    not counted, however long dtach takes to close its end.  None when the kernel's
    diagnostics cannot be read here (``attached_clients`` then counts every connection)."""
    wanted = {p: 0 for p in socket_paths}
    by_name = {p.encode(): p for p in wanted}
    request = struct.pack("=BBHIII2I", socket.AF_UNIX, 0, 0, 1 << _TCP_ESTABLISHED, 0,
                          _UDIAG_SHOW_NAME, 0xFFFFFFFF, 0xFFFFFFFF)
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST_DUMP,
                         1, 0)
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_SOCK_DIAG) as nl:
            nl.settimeout(2.0)
            nl.sendall(header + request)
            while True:
                data = nl.recv(1 << 16)
                if not data:
                    return None
                pos = 0
                while pos + 16 <= len(data):
                    length, kind = struct.unpack_from("=IH", data, pos)
                    if kind == _NLMSG_DONE:
                        return wanted
                    if kind == _NLMSG_ERROR or length < 16:
                        return None
                    _count(data[pos + 16:pos + length], by_name, wanted)
                    pos += (length + 3) & ~3
    except (OSError, struct.error):
        return None


def _count(msg: bytes, by_name: Mapping[bytes, str], wanted: dict[str, int]) -> None:
    """One ``unix_diag_msg`` (16 bytes, then attributes): counted when it is an established
    end with one of the wanted names and no shutdown (its peer is still there)."""
    if len(msg) < 16 or msg[2] != _TCP_ESTABLISHED:
        return
    name, shutdown, pos = None, 0, 16
    while pos + 4 <= len(msg):
        size, kind = struct.unpack_from("=HH", msg, pos)
        if size < 4:
            break
        value = msg[pos + 4:pos + size]
        if kind == _UNIX_DIAG_NAME:
            name = value.rstrip(b"\0")
        elif kind == _UNIX_DIAG_SHUTDOWN and value:
            shutdown = value[0]
        pos += (size + 3) & ~3
    if name is not None and name in by_name and not shutdown:
        wanted[by_name[name]] += 1
