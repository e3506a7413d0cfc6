"""Small, careful file helpers for the policy's per-session files.

Every file here lives in a folder other users may be able to write to
(``/tmp`` by default), so reads refuse symlinks and files owned by someone
else, and writes go through a private temporary file and ``rename``.
Builtins only: the hook twin imports this on its hot path.
"""

from __future__ import annotations

import posix

from aipager.proto import jsonlite

_loads, dumps = jsonlite.loads, jsonlite.dumps


def loads(data):
    """Decode one JSON document from str or UTF-8 bytes; ValueError if it is not."""
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8")
    return _loads(data)


def lexists(path) -> bool:
    """``os.path.lexists`` without importing os (hook hot path)."""
    try:
        posix.lstat(path)
    except (OSError, ValueError):
        return False
    return True


#: largest policy-side file the hook will read (notes, snapshots, markers)
MAX_READ = 1 << 20

_NOFOLLOW = getattr(posix, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(posix, "O_NONBLOCK", 0)


def read_own(path: str, limit: int = MAX_READ) -> bytes | None:
    """Bytes of ``path`` if it is our own regular file, not a symlink; else None.

    A file someone else owns or a symlink is treated as absent: the callers
    fall back to the stricter answer.
    """
    try:
        fd = posix.open(path, posix.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except OSError:
        return None
    try:
        st = posix.fstat(fd)
        if (st.st_mode & 0o170000) != 0o100000 or st.st_uid != posix.getuid():
            return None
        if st.st_size > limit:
            return None
        chunks = []
        while True:
            chunk = posix.read(fd, limit + 1)
            if not chunk:
                break
            chunks.append(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    finally:
        posix.close(fd)


def read_json_own(path: str, limit: int = MAX_READ):
    """Decoded JSON object of our own file, or None when absent or unusable."""
    data = read_own(path, limit)
    if data is None:
        return None
    try:
        value = loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def read_json_file(path: str, error: type[Exception]):
    """The JSON document in the owner's file ``path`` (a config or a policy).

    Raises FileNotFoundError when there is none, each caller deciding what absence
    means; an unreadable file or one that is not JSON raises ``error`` naming the file
    and the line, never the decoder's words, which could quote a token.
    """
    import json  # lazily: its line numbers are for people; the hot path has jsonlite

    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise
    except OSError as exc:
        msg = f"cannot read {path}: {exc.strerror}"
        raise error(msg) from exc
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" (line {line})" if line else ""
        msg = f"{path} is not valid JSON{where}; fix or delete it"
        raise error(msg) from None


def ensure_private_dir(path: str) -> None:
    """Create ``path`` with mode 0700, or check an existing one is ours and private.

    Raises:
        PermissionError: the folder exists but is a symlink, foreign or shared.
    """
    try:
        posix.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = posix.lstat(path)
    if (st.st_mode & 0o170000) != 0o040000 or st.st_uid != posix.getuid():
        msg = f"{path} is not a folder owned by this user"
        raise PermissionError(msg)
    if st.st_mode & 0o077:
        posix.chmod(path, 0o700)


def write_atomic(path: str, data: bytes, mode: int = 0o600, *, sync: bool = False) -> None:
    """Write ``data`` to ``path`` through a private temporary file and rename: a reader
    sees the old file or the new one, never half, and a symlink planted where the
    temporary file goes is never followed.  aipager's one atomic writer (the daemon's
    state, the config, Claude Code's settings, the policy's files).

    Args:
        mode: the new file's permissions (0600: owner only).
        sync: fsync before the rename, so the file survives a crash of the machine,
            not only of the process.
    """
    tmp = f"{path}.tmp{posix.getpid()}-{posix.urandom(4).hex()}"
    fd = posix.open(tmp, posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL | _NOFOLLOW, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[posix.write(fd, view) :]
        posix.fchmod(fd, mode)
        if sync:
            posix.fsync(fd)
    except BaseException:
        posix.close(fd)
        posix.unlink(tmp)
        raise
    posix.close(fd)
    try:
        posix.rename(tmp, path)
    except BaseException:
        posix.unlink(tmp)
        raise


def write_json_atomic(path: str, value, mode: int = 0o600) -> None:
    write_atomic(path, dumps(value).encode("ascii"), mode)


def realpath_strict(path: str) -> str:
    """``os.path.realpath(path, strict=True)`` for an absolute ``path``,
    without importing ``os`` (~2.5 ms in a fresh ``python -S``, most of the
    hook twin's budget).  Same walk as CPython's ``posixpath``: components
    left to right, ``..`` applied to what is resolved so far, each symlink
    resolved where it stands.

    Raises:
        OSError: a component is missing, or the links loop.
        ValueError: a NUL in the path.
    """
    return _join_real("/", path, {})


def _join_real(path: str, rest: str, seen: dict) -> str:
    if rest.startswith("/"):
        rest, path = rest[1:], "/"
    while rest:
        name, _, rest = rest.partition("/")
        if not name or name == ".":
            continue
        if name == "..":
            # posixpath.split, then its "a/.." case cannot occur: path is absolute
            cut = path.rfind("/") + 1
            path = path[:cut].rstrip("/") or "/"
            continue
        newpath = path + name if path.endswith("/") else path + "/" + name
        if (posix.lstat(newpath).st_mode & 0o170000) != 0o120000:
            path = newpath
            continue
        if newpath in seen:
            path = seen[newpath]
            if path is None:
                raise OSError(40, "Too many levels of symbolic links", newpath)
            continue
        seen[newpath] = None
        path = _join_real(path, posix.readlink(newpath), seen)
        seen[newpath] = path
    return path


def append_whole(fd: int, data: bytes, size: int) -> str:
    """Append ``data`` in one write to the append-only journal open at ``fd`` (``size`` bytes
    long before it): "" when written whole, else what went wrong, in words.

    A short write (disk full) is cut off again: a torn record would end the reading at the
    next start and hide every later one.
    """
    try:
        written = posix.write(fd, data)
    except OSError as exc:
        return f"cannot be written ({exc.strerror})"
    if written != len(data):
        try:
            posix.ftruncate(fd, size)
        except OSError:
            pass
        return "is full (short write)"
    return ""


def unlink_quiet(path: str) -> bool:
    """Remove ``path``; True when something was removed."""
    try:
        posix.unlink(path)
    except OSError:
        return False
    return True
