"""Which shared paths aipager may trust: its private folder and sockets of its own.

Another user of the machine can create names in ``/tmp`` before we do: a
folder, a socket, a symlink to their own folder.  So nothing is trusted for
its name alone (issue 16):

- the private folder (``paths.private_dir``, ``/tmp/aipager-<uid>``) is made
  0700 by whoever needs it first (``ensure_private_dir``); one that exists as
  a symlink, with another owner or with another mode is refused;
- a socket is used only when it is a socket of our own uid, never through a
  symlink (``socket_finding``); the hook checks the same in C
  (``_fasthook/send.pxi``) and in its twin (``aipager.hookpy.transport``).

A problem is a ``Finding`` (what, and the fix), which ``aipager doctor`` shows
as it is and the rest raise as ``UnsafePath``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from aipager.proto import paths
from aipager.proto.errors import UnsafePath

#: what to do about a private folder or socket another user holds
_FOREIGN_FIX = ("do not use it; have an administrator remove {path} and find out who made it, "
                "or set AIPAGER_INSTANCE_DIR to a folder only you can write")


@dataclass(frozen=True)
class Finding:
    """Why a path is not trusted, and what fixes it."""

    what: str
    fix: str
    #: another user (or a symlink) is involved: possibly an attack, not a slip
    attack: bool = False

    def __str__(self) -> str:
        return f"{self.what}; {self.fix}"


def owner(uid: int) -> str:
    """``uid 1001 (mallory)``, or just the number when it has no name."""
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def foreign_finding(path: str, st: os.stat_result, kind: str) -> Finding | None:
    """A symlink, or an owner other than us, at ``path``: the attack findings."""
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        attack = st.st_uid != os.getuid()
        what = f"{path} is a symlink (to {target}) where aipager's {kind} belongs"
        return Finding(("possible attack: " + what) if attack else what,
                       _FOREIGN_FIX.format(path=path), attack=attack)
    if st.st_uid != os.getuid():
        return Finding(f"possible attack: {path} belongs to {owner(st.st_uid)}, not to you, "
                       f"so another user may read or redirect what aipager puts in its {kind}",
                       _FOREIGN_FIX.format(path=path), attack=True)
    return None


def private_dir_finding(path: str) -> Finding | None:
    """None when ``path`` is missing or a real folder of ours with mode 0700."""
    found = own_folder_finding(path, "private folder")
    if found is not None:
        return found
    try:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None
    if mode != 0o700:
        return Finding(f"{path} has mode {mode:04o}, not 0700, so others may "
                       "reach aipager's sockets and session files in it",
                       f"check that nothing in it is someone else's, then `chmod 700 {path}`")
    return None


def ensure_private_dir(path: str) -> None:
    """Create ``path`` 0700, or check that the existing one is our private folder.

    Raises:
        UnsafePath: a symlink, another owner, not a folder, or a mode other than 0700.
    """
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        msg = f"cannot create {path} ({exc.strerror}); set AIPAGER_INSTANCE_DIR to a folder you own"
        raise UnsafePath(msg) from exc
    else:
        os.chmod(path, 0o700)  # ours, just made: only the umask may have narrowed it
    found = private_dir_finding(path)
    if found is not None:
        raise UnsafePath(str(found))


def make_folder(folder: str) -> None:
    """Create ``folder`` for aipager's files: the private folder strictly, any other 0700.

    Raises:
        UnsafePath: ``folder`` is the private folder and is not ours (``ensure_private_dir``).
        OSError: another folder cannot be created.
    """
    if folder == paths.private_dir():
        ensure_private_dir(folder)
    else:
        os.makedirs(folder, mode=0o700, exist_ok=True)


def socket_finding(path: str, kind: str = "control socket") -> Finding | None:
    """None when nothing is at ``path`` or it is a socket of ours; else what is wrong."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Finding(f"cannot check the {kind} {path}: {exc.strerror}",
                       f"make {os.path.dirname(path) or '.'} reachable for you")
    found = foreign_finding(path, st, kind)
    if found is not None:
        return found
    if not stat.S_ISSOCK(st.st_mode):
        return Finding(f"{path} exists and is not a socket", f"move {path} away and start again")
    return None


def require_own_socket(path: str, kind: str = "control socket") -> None:
    """Raise ``UnsafePath`` unless ``path`` is missing or a socket of ours."""
    found = socket_finding(path, kind)
    if found is not None:
        raise UnsafePath(str(found))


def own_folder_finding(path: str, kind: str) -> Finding | None:
    """None when ``path`` is missing or a real folder of ours (any mode)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Finding(f"cannot check {path}: {exc.strerror}", f"make {path} reachable for you")
    found = foreign_finding(path, st, kind)
    if found is None and not stat.S_ISDIR(st.st_mode):
        found = Finding(f"{path} is not a folder", f"move {path} away")
    return found


def open_own_dir(path: str) -> int:
    """An ``O_DIRECTORY`` descriptor of ``path`` when it is a real folder (not a symlink)
    that this process owns.  Checked on the open descriptor, so the folder cannot be
    swapped between the check and its use (files are then made with ``dir_fd``).

    Raises:
        OSError: it cannot be opened (missing, a symlink, not a folder).
        UnsafePath: another user owns it.
    """
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        uid = os.fstat(fd).st_uid
    except OSError:
        os.close(fd)
        raise
    if uid != os.geteuid():
        os.close(fd)
        msg = f"{path} belongs to {owner(uid)}, not to you"
        raise UnsafePath(msg)
    return fd


def findings(env) -> list[Finding]:
    """What ``doctor`` and ``status`` report: the private folder, if it is in use, and the control socket."""
    found = []
    private = paths.private_dir()
    if private in (paths.control_dir(env), paths.session_dir(env)):
        f = private_dir_finding(private)
        if f is not None:
            found.append(f)
    f = socket_finding(paths.socket_path(env))
    if f is not None:
        found.append(f)
    return found
