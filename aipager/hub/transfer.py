"""Files from the phone to a host: the hub's copy travels in pieces, the host keeps its own.

The chat saves a photo or document on the hub machine (``<files>/in/u<user id>/…``)
and names that path in the prompt.  When the prompt goes to a session on another
host, ``HubPort`` finds those paths in the text (``inbox_paths``), sends each file
as ``PutFile`` commands of at most ``CHUNK`` bytes (ahead of the prompt, in the
same ordered command stream), and the prompt's command carries which hub path is
which file.  The host writes the pieces into the same person's folder on its own disk
(``<files>/in/u<user id>/``, named by the hub path's folder, never by who sent the
prompt: a message naming another person's file gets a copy only that person's tasks
read; ``<files>/in/from-hub/`` for a path in no person's folder), 0700, files 0600,
created exclusively, never through a link, and before typing replaces each
hub path in the text with its own (``rewrite``): the session reads a file on its
own disk.  A file bigger than ``MAX_FILE`` (Telegram's own download limit, so never
in practice) is not sent; the prompt then fails with that said.  Failures are
``ValueError``s: the host answers them as such and the chat says "not delivered"
with their words.  Files older than a
day are removed when the next one arrives, as the chat's own are.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
import time
from typing import Iterator, Mapping

from aipager.proto import paths

#: bytes of file in one command (base64 in JSON: well under the broker's 1 MB message)
CHUNK = 256 * 1024
#: the largest file sent to a host
MAX_FILE = 20 * 1024 * 1024
#: received files are removed after a day
MAX_AGE = 24 * 3600.0
#: the slowest link a file is given time for (bytes a second): the pieces and the prompt
#: after them wait this much longer than a command does
SLOW_LINK = 512 * 1024
_NAME = re.compile(r"[^A-Za-z0-9._ -]")


def hub_inbox(env: Mapping[str, str]) -> str:
    """Where the chat keeps what the phone sent (``aipager.files.inbox_dir``'s parent)."""
    return os.path.join(paths.files_dir(env), "in") + os.sep


def incoming_dir(env: Mapping[str, str], person: str = "") -> str:
    """Where a host keeps the files the hub sent it: ``person``'s folder (``person_of``), or
    ``from-hub`` (the floor keeps it from every task but the owner's)."""
    return os.path.join(paths.files_dir(env), "in", person or "from-hub")


#: a person's folder name under ``<files>/in/`` (``paths.uploads_dir``)
_PERSON = re.compile(r"u[1-9][0-9]{0,19}")


def person_of(hub_path: str) -> str:
    """The person's folder (``u<user id>``) a file of the hub's inbox lies in, or "" when it
    lies in no person's folder (the host keeps it in ``from-hub``)."""
    folder = os.path.basename(os.path.dirname(hub_path))
    return folder if _PERSON.fullmatch(folder) else ""


def inbox_paths(env: Mapping[str, str], text: str) -> list[str]:
    """The files under the chat's inbox that ``text`` names, longest match first at each
    mention (a saved name may hold spaces)."""
    prefix = hub_inbox(env)
    found: list[str] = []
    start = text.find(prefix)
    while start >= 0:
        ends = [m.start() for m in re.finditer(r"\s", text[start:])] + [len(text) - start]
        for end in sorted(ends, reverse=True):
            candidate = text[start:start + end]
            # spelled plainly: "<files>/in/../../…" names no file of the inbox
            if (os.path.normpath(candidate) == candidate and os.path.isfile(candidate)
                    and not os.path.islink(candidate)):
                if candidate not in found:
                    found.append(candidate)
                start += end
                break
        else:
            start += len(prefix)
        start = text.find(prefix, start)
    return found


def file_id(path: str) -> str:
    """A name for one version of one file (its path, size and time)."""
    st = os.stat(path)
    return hashlib.sha256(f"{path}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:20]


def time_for(size: int) -> float:
    """Seconds to give ``size`` bytes of files on the slowest link expected."""
    return size / SLOW_LINK


def pieces(path: str) -> Iterator[tuple[int, int, str]]:
    """``(part, parts, base64 data)`` for each piece of ``path``.

    Raises:
        ValueError: the file is larger than ``MAX_FILE``.
    """
    size = os.path.getsize(path)
    if size > MAX_FILE:
        msg = (f"{os.path.basename(path)} is {size / 2**20:.1f} MB: files up to "
               f"{MAX_FILE // 2**20} MB travel to another machine")
        raise ValueError(msg)
    parts = max(1, -(-size // CHUNK))
    with open(path, "rb") as fh:
        for part in range(parts):
            yield part, parts, base64.b64encode(fh.read(CHUNK)).decode("ascii")


# -- the host's side ----------------------------------------------------------------------

def _folder(env: Mapping[str, str], person: str = "") -> str:
    if person and not _PERSON.fullmatch(person):
        msg = "a file for a folder that is no person's"
        raise ValueError(msg)
    folder = incoming_dir(env, person)
    for made in (paths.files_dir(env), os.path.dirname(folder), folder):
        os.makedirs(made, mode=0o700, exist_ok=True)  # (the mode holds for the leaf only)
    st = os.lstat(folder)
    if not os.path.isdir(folder) or os.path.islink(folder) or st.st_uid != os.getuid():
        msg = f"{folder} is not this user's own folder; no file received"
        raise ValueError(msg)
    os.chmod(folder, 0o700)
    return folder


def _final(folder: str, fid: str) -> str | None:
    for entry in os.listdir(folder):
        if entry.startswith(f"{fid}-") and not entry.endswith(".part"):
            return os.path.join(folder, entry)
    return None


def put(env: Mapping[str, str], fid: str, name: str, part: int, parts: int, data: str,
        person: str = "") -> None:
    """Keep one piece in ``person``'s folder (``person_of`` the hub's path); the last one
    makes the file whole under its name.

    Raises:
        ValueError: a piece out of order, bad data, or a folder that is not ours.
    """
    if not re.fullmatch(r"[0-9a-f]{8,64}", fid) or not 0 <= part < parts:
        msg = "a file piece that does not fit"
        raise ValueError(msg)
    folder = _folder(env, person)
    if _final(folder, fid) is not None:
        return  # sent before (a prompt released again): kept already
    partial = os.path.join(folder, f"{fid}.part")
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    if part == 0:
        sweep(folder)
        with _quiet():
            os.unlink(partial)
        flags |= os.O_CREAT | os.O_EXCL
    else:
        flags |= os.O_APPEND
    try:
        raw = base64.b64decode(data, validate=True)
        fd = os.open(partial, flags, 0o600)
    except (ValueError, OSError) as exc:
        msg = f"a piece of {name} could not be kept ({exc})"
        raise ValueError(msg) from exc
    with os.fdopen(fd, "wb") as fh:
        if part and os.fstat(fd).st_size != part * CHUNK:
            msg = f"a piece of {name} came out of order"
            raise ValueError(msg)
        fh.write(raw)
    if part == parts - 1:
        safe = _NAME.sub("_", os.path.basename(name)).lstrip(".")[:120] or "file"
        os.replace(partial, os.path.join(folder, f"{fid}-{safe}"))


def rewrite(env: Mapping[str, str], text: str, files: Mapping[str, str]) -> str:
    """``text`` with each hub path in ``files`` (hub path → file id) replaced by where this
    host keeps that file.

    Raises:
        ValueError: a file that did not arrive whole.
    """
    if not files:
        return text
    for hub_path, fid in sorted(files.items(), key=lambda kv: -len(kv[0])):
        here = _final(_folder(env, person_of(hub_path)), fid)
        if here is None:
            msg = f"{os.path.basename(hub_path)} did not arrive on this machine; send it again"
            raise ValueError(msg)
        text = text.replace(hub_path, here)
    return text


def sweep(folder: str, now: float | None = None) -> int:
    """Remove received files older than ``MAX_AGE``; returns how many."""
    now = time.time() if now is None else now
    gone = 0
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        with _quiet():
            if now - os.lstat(path).st_mtime > MAX_AGE:
                os.unlink(path)
                gone += 1
    return gone


def _quiet() -> contextlib.suppress:
    return contextlib.suppress(FileNotFoundError)
