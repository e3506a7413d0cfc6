"""Files both ways, on disk: what the phone sends, and copies of what Claude sends.

Everything lives under ``paths.files_dir`` in owner-only folders (0700, files
0600): ``in/u<user id>/`` for what each person sent (``paths.uploads_dir``: the
safety floor keeps the whole files folder from every task but the owner's, and
opens a person's own folder to their own tasks only), ``out/`` for the copies
waiting to be uploaded.  A folder that is a symlink, another user's, or open to others is
refused, never used; files are created with ``O_EXCL | O_NOFOLLOW`` relative
to the folder's descriptor, so nothing is written through a planted link or
outside its folder.  Files older than ``MAX_AGE`` are removed by ``sweep``.

Who calls what: the service keeps what a person sends (``save_download``, for
``KeepFiles``); the daemon checks and copies what Claude sends once (``take_for_sending``,
``daemon.sendfiles``), and each surface takes a name of its own for a copy (``own_name``:
the chat uploads and removes its own, the page serves its own to its signed-in people).
The copying calls block: they run in a worker thread.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import time
import unicodedata
from dataclasses import dataclass
from typing import Callable, Mapping, TypeVar

from aipager.proto import paths, trust
from aipager.proto.errors import AipagerError, UnsafePath

#: Telegram lets bots download up to 20 MB
DOWNLOAD_MAX = 20 * 1024 * 1024
#: Telegram's upload limits for bots
PHOTO_MAX = 10 * 1024 * 1024
DOCUMENT_MAX = 50 * 1024 * 1024
#: files are removed after a day
MAX_AGE = 24 * 3600.0
#: the longest name kept (bytes of UTF-8), before the unique prefix
NAME_MAX = 120
PHOTO_TYPES = (".jpg", ".jpeg", ".png", ".webp", ".gif")

T = TypeVar("T")

_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\]")


class FileRefused(AipagerError):
    """A file the chat will not take or send (the message says why)."""


def safe_name(name: str, fallback: str = "file") -> str:
    """A file name that cannot leave its folder or hide: no separators, no control or
    direction characters, no leading dots, bounded length."""
    name = unicodedata.normalize("NFC", name or "")
    name = "".join(ch for ch in name if unicodedata.category(ch) not in ("Cf", "Cc", "Cs"))
    name = _UNSAFE.sub("_", name).strip().lstrip(".").strip()
    if not name or name in (".", ".."):
        name = fallback
    raw = name.encode("utf-8")
    if len(raw) > NAME_MAX:
        stem, dot, ext = name.rpartition(".")
        ext = f".{ext}" if dot and len(ext.encode()) <= 16 else ""
        name = (stem if dot else name).encode()[:NAME_MAX - len(ext.encode())].decode(
            "utf-8", "ignore") + ext
    return name


def private_dir(path: str) -> int:
    """Create ``path`` (and its parents) owner-only if needed; return an O_DIRECTORY fd.

    Raises:
        FileRefused: the folder is a symlink, not ours, or open to others.
    """
    make_private_dirs(path)
    not_private = f"{path} is not a private folder of this user; aipager will not put files there"
    try:
        fd = trust.open_own_dir(path)
    except UnsafePath:
        raise FileRefused(not_private) from None
    except OSError as exc:
        msg = f"{path} cannot be used for files ({exc.strerror})"
        raise FileRefused(msg) from exc
    if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
        os.close(fd)
        raise FileRefused(not_private)
    return fd


def make_private_dirs(path: str) -> None:
    """Create ``path`` and every missing folder above it 0700 (``os.makedirs`` gives the
    parents it creates the umask's mode: ``~/.cache/aipager/files`` came out 0755)."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass


def _files_root(env: Mapping[str, str]) -> None:
    """The files folder, created owner-only; one an older aipager made 0755 (ours, and
    nobody else could write into it) is closed to 0700.  Anything else wrong with it is
    refused by ``private_dir`` below it."""
    root = paths.files_dir(env)
    make_private_dirs(root)
    try:
        fd = trust.open_own_dir(root)
    except (OSError, UnsafePath):
        return
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & 0o077 and not mode & 0o022:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def _unique(name: str, make: Callable[[str], T]) -> tuple[T, str]:
    """``make(unique)`` for a fresh ``<random>-name`` (a name taken already is tried
    again); what it made and the name.

    Raises:
        FileRefused: twenty names in a row were taken.
    """
    for _ in range(20):
        unique = f"{secrets.token_hex(3)}-{name}"
        try:
            return make(unique), unique
        except FileExistsError:
            continue
    msg = "no free file name"
    raise FileRefused(msg)


def _create(dir_fd: int, name: str) -> tuple[int, str]:
    return _unique(name, lambda unique: os.open(
        unique, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd))


def inbox_dir(env: Mapping[str, str], user_id: int) -> str:
    """Where the files ``user_id`` sends are kept: theirs alone (``paths.uploads_dir``)."""
    return paths.uploads_dir(env, user_id)


def outbox_dir(env: Mapping[str, str]) -> str:
    return os.path.join(paths.files_dir(env), "out")


def save_download(env: Mapping[str, str], user_id: int, name: str, data: bytes) -> str:
    """Write a file ``user_id`` sent from the chat into their own private folder; returns
    its path."""
    folder = inbox_dir(env, user_id)
    _files_root(env)
    os.close(private_dir(os.path.dirname(folder)))
    dir_fd = private_dir(folder)
    try:
        fd, unique = _create(dir_fd, safe_name(name))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    finally:
        os.close(dir_fd)
    return os.path.join(folder, unique)


@dataclass(frozen=True)
class Outgoing:
    """A checked private copy of a file Claude sends."""

    path: str
    filename: str
    photo: bool


def take_for_sending(env: Mapping[str, str], session: str, files: list[str],
                     cwd: str) -> tuple[list[Outgoing], list[dict]]:
    """Check each file as the hook did (floor, secret-shaped names, the task's rules, the
    file itself) and copy it at once, so a later change cannot swap what is sent.

    Returns:
        (copies ready to upload, refused files as ``{path, code, reason}``).
    """
    from aipager.policy import hookside, sendfile

    home = paths.home(env)
    try:
        snap = hookside.current_rules(env, session, time.time())
        task = None if (snap["origin"] == "terminal" or snap["exempt"]) else snap
    except Exception:  # noqa: BLE001 - an unreadable task: check against the floor only
        task = {"no_access": []}
    globs = sendfile.send_floor(env, home)
    out: list[Outgoing] = []
    refused: list[dict] = []
    folder = outbox_dir(env)
    _files_root(env)
    for path in files:
        problem = sendfile.check_file(path, cwd, home, globs, task)
        if problem is None:
            try:
                out.append(_copy(folder, os.path.realpath(path)))
                continue
            except FileRefused as exc:
                problem = ("changed", str(exc))
            except OSError as exc:
                problem = ("unreadable", exc.strerror or "cannot be read")
        refused.append({"path": path, "code": problem[0], "reason": problem[1]})
    return out, refused


def _copy(folder: str, real: str) -> Outgoing:
    src = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        st = os.fstat(src)
        # The same conditions the check saw, now on what is actually open.
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1 or not 0 < st.st_size <= DOCUMENT_MAX:
            msg = "the file changed while it was being sent"
            raise FileRefused(msg)
        dir_fd = private_dir(folder)
        try:
            name = safe_name(os.path.basename(real))
            dst, unique = _create(dir_fd, name)
            with os.fdopen(dst, "wb") as out:
                while chunk := os.read(src, 1 << 20):
                    out.write(chunk)
        finally:
            os.close(dir_fd)
    finally:
        os.close(src)
    photo = name.lower().endswith(PHOTO_TYPES) and st.st_size <= PHOTO_MAX
    return Outgoing(os.path.join(folder, unique), name, photo)


def own_name(copy: str) -> str:
    """A second name of the daemon's checked copy ``copy`` (a hard link in the same
    owner-only folder), for one surface to send and remove as it likes: the chat removes
    what it uploaded while the page still offers it.  The content is the copy's, checked
    once; ``sweep`` removes the names left.

    Raises:
        FileRefused: the copy is gone, or its folder is not a private one of ours.
    """
    folder, name = os.path.split(copy)
    dir_fd = private_dir(folder)
    try:
        _, unique = _unique(name.split("-", 1)[-1], lambda unique: os.link(
            name, unique, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False))
    except OSError as exc:  # (a name taken already: ``_unique`` tried another)
        msg = f"the checked copy is gone ({exc.strerror})"
        raise FileRefused(msg) from exc
    finally:
        os.close(dir_fd)
    return os.path.join(folder, unique)


def sweep(env: Mapping[str, str], now: float | None = None) -> int:
    """Remove files older than ``MAX_AGE`` from the file folders; returns how many."""
    now = time.time() if now is None else now
    removed = 0
    root = paths.files_dir(env)
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
                if now - st.st_mtime > MAX_AGE:
                    os.unlink(path)
                    removed += 1
            except OSError:
                continue
    return removed
