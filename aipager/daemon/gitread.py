"""Reading a project's git repository without letting the project steer git.

``/diff`` and the page's Changes must show what a task changed, and a task (a member's,
through Claude Code) can write anything in its folder: ``.git/config``, ``.gitattributes``,
hooks, a ``.git`` file pointing elsewhere.  Git runs a program named in a repository's
config in many places (clean and smudge filters whenever it hashes a work-tree file,
textconv, external diffs, fsmonitor, hooks, credential helpers, pagers …), and the list
grows with every release.  So nothing here asks git to *work in* the project at all:

- the repository is found, and its ``HEAD`` resolved to a commit id, in Python (files
  read as data: ``.git``, ``HEAD``, loose refs, ``packed-refs``);
- git runs only inside a **sealed git folder of our own**, made fresh in a private
  temporary folder for each look: its config is the two lines we write, the project's
  objects reach it only as *data* through ``objects/info/alternates``, the system and
  global configs are off (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``,
  ``HOME`` and ``XDG_CONFIG_HOME`` in the sealed folder), and the environment is built
  from nothing (no inherited ``GIT_*``);
- git is asked only to read objects (``ls-tree``, ``cat-file --batch``: neither applies
  filters) and to list the work tree's untracked files (``ls-files --others``, which
  reads ``.gitignore`` files as data and hashes nothing).

A ``filter=…`` or ``diff=…`` attribute in the project's ``.gitattributes`` then names a
driver that no config read by git defines, so git runs nothing for it, whatever the
project wrote.  The work-tree files themselves are read by the caller directly.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Iterator

#: how long one git call may take
GIT_TIMEOUT = 15.0
_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REF = re.compile(r"refs/[A-Za-z0-9._/@+-]{1,200}")


@dataclass(frozen=True)
class Repo:
    """A project's repository as found from a folder inside its work tree."""

    #: the work tree's top folder
    top: str
    #: the folder holding HEAD (``.git``, or a worktree's own folder)
    gitdir: str
    #: the folder holding refs and objects (``commondir`` of a worktree, else ``gitdir``)
    common: str


def find(folder: str) -> Repo | None:
    """The repository whose work tree holds ``folder`` (its nearest ``.git``), read as
    files; None when there is none."""
    here = os.path.realpath(folder)
    while True:
        dot = os.path.join(here, ".git")
        gitdir = _gitdir(dot, here)
        if gitdir is not None:
            return Repo(here, gitdir, _common(gitdir))
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _gitdir(dot: str, top: str) -> str | None:
    if os.path.isdir(dot) and not os.path.islink(dot):
        return dot if os.path.isfile(os.path.join(dot, "HEAD")) else None
    if not os.path.isfile(dot):
        return None
    try:
        with open(dot, encoding="utf-8", errors="replace") as fh:
            first = fh.readline(4096)
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    target = os.path.normpath(os.path.join(top, first[7:].strip()))
    return target if os.path.isfile(os.path.join(target, "HEAD")) else None


def _common(gitdir: str) -> str:
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as fh:
            return os.path.normpath(os.path.join(gitdir, fh.readline().strip()))
    except OSError:
        return gitdir


def head(repo: Repo) -> str | None:
    """The commit ``HEAD`` names, or None (a branch with no commit yet, or a ref this
    reader cannot resolve)."""
    try:
        with open(os.path.join(repo.gitdir, "HEAD"), encoding="utf-8") as fh:
            line = fh.readline(4096).strip()
    except OSError:
        return None
    for _ in range(5):  # a symbolic ref may name another one
        if _HEX.fullmatch(line):
            return line
        if not line.startswith("ref:"):
            return None
        ref = line[4:].strip()
        if not _REF.fullmatch(ref) or ".." in ref.split("/"):
            return None
        line = _ref(repo, ref) or ""
    return None


def _ref(repo: Repo, ref: str) -> str | None:
    for base in (repo.gitdir, repo.common):
        try:
            with open(os.path.join(base, ref), encoding="utf-8") as fh:
                return fh.readline(4096).strip()
        except OSError:
            continue
    try:
        with open(os.path.join(repo.common, "packed-refs"), encoding="utf-8",
                  errors="replace") as fh:
            for line in fh:
                oid, _, name = line.strip().partition(" ")
                if name == ref and _HEX.fullmatch(oid):
                    return oid
    except OSError:
        pass
    return None


@dataclass(frozen=True)
class Entry:
    """One file of a commit's tree."""

    mode: str
    oid: str
    path: str


class Sealed:
    """Git, confined to a sealed git folder that reads the project's objects as data."""

    def __init__(self, repo: Repo, folder: str, binary: str, object_format: str) -> None:
        self.repo = repo
        gitdir = os.path.join(folder, "git")
        for sub in ("objects/info", "refs"):
            os.makedirs(os.path.join(gitdir, sub))
        with open(os.path.join(gitdir, "HEAD"), "w", encoding="utf-8") as fh:
            fh.write("ref: refs/heads/sealed\n")
        with open(os.path.join(gitdir, "config"), "w", encoding="utf-8") as fh:
            version = 1 if object_format != "sha1" else 0
            fh.write(f"[core]\n\trepositoryformatversion = {version}\n\tbare = false\n")
            if object_format != "sha1":
                fh.write(f"[extensions]\n\tobjectformat = {object_format}\n")
        with open(os.path.join(gitdir, "objects", "info", "alternates"), "w",
                  encoding="utf-8") as fh:
            fh.write(os.path.join(repo.common, "objects") + "\n")
        # the project's own exclude list is data: copied, so untracked files are as git shows
        with contextlib.suppress(OSError):
            os.makedirs(os.path.join(gitdir, "info"), exist_ok=True)
            shutil.copyfile(os.path.join(repo.common, "info", "exclude"),
                            os.path.join(gitdir, "info", "exclude"))
        self._argv0 = binary
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C",
            "HOME": folder, "XDG_CONFIG_HOME": folder,
            "GIT_DIR": gitdir, "GIT_WORK_TREE": repo.top,
            "GIT_INDEX_FILE": os.path.join(folder, "index"),  # never written: empty
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0",
        }

    def run(self, *args: str, data: bytes | None = None) -> bytes | None:
        """git ``args`` in the sealed folder; its output, or None when it failed."""
        try:
            proc = subprocess.run([self._argv0, *args], cwd=self.repo.top, env=self.env,
                                  input=data, capture_output=True, timeout=GIT_TIMEOUT,
                                  check=False, stdin=None if data is not None
                                  else subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout if proc.returncode == 0 else None

    def tree(self, commit: str) -> list[Entry] | None:
        """Every file of ``commit``'s tree (submodules left out)."""
        raw = self.run("ls-tree", "-r", "-z", "--full-tree", commit)
        if raw is None:
            return None
        entries = []
        for item in raw.split(b"\0"):
            meta, tab, path = item.partition(b"\t")
            parts = meta.split()
            if not tab or len(parts) != 3 or parts[1] != b"blob":
                continue
            entries.append(Entry(parts[0].decode(), parts[2].decode(),
                                 path.decode("utf-8", "surrogateescape")))
        return entries

    def blobs(self, oids: list[str]) -> dict[str, bytes]:
        """The contents of blobs, as stored (``cat-file --batch`` applies no filter)."""
        if not oids:
            return {}
        raw = self.run("cat-file", "--batch", data="".join(f"{o}\n" for o in oids).encode())
        found: dict[str, bytes] = {}
        pos = 0
        while raw is not None and pos < len(raw):
            end = raw.index(b"\n", pos)
            header = raw[pos:end].split()
            pos = end + 1
            if len(header) != 3:  # "<oid> missing"
                continue
            size = int(header[2])
            found[header[0].decode()] = raw[pos:pos + size]
            pos += size + 1
        return found

    def untracked(self) -> list[str]:
        """Work-tree files git does not ignore, against an empty index: every such file
        (the caller takes out those of the commit's tree)."""
        raw = self.run("ls-files", "--others", "--exclude-standard", "-z")
        names = [n.decode("utf-8", "surrogateescape") for n in (raw or b"").split(b"\0") if n]
        return [n for n in names if not n.endswith("/")]  # a nested repository's folder


@contextlib.contextmanager
def sealed(repo: Repo, commit: str | None) -> Iterator[Sealed | None]:
    """A ``Sealed`` git for ``repo`` (None when there is no git program), removed after."""
    binary = shutil.which("git")
    if binary is None:
        yield None
        return
    fmt = "sha256" if commit is not None and len(commit) == 64 else "sha1"
    with tempfile.TemporaryDirectory(prefix="aipager-git-") as folder:
        yield Sealed(repo, folder, binary, fmt)


__all__ = ["Entry", "Repo", "Sealed", "find", "head", "sealed"]
