"""What a session has changed in its folder: ``git diff`` of its work tree, for ``/diff``.

A person away from the computer wants to see what Claude did to the project before they
say "commit it" or "undo that", without asking Claude (a paid turn that may itself change
things).  So the daemon asks git: every tracked file that differs from ``HEAD`` (the
empty tree in a repository with no commit yet) and every new file git does not ignore.

Reading the diff must not run anything the project's files name: a task may have written
``.git/config`` or ``.gitattributes``, so git runs with no external diff program, no
textconv filter, no fsmonitor hook and no optional lock (a diff never writes the index).

Whoever asks sees only the files a Read of them would be allowed for their task (the
``allowed`` check, from their role and the floor): the diff reaches no further than the
tools do.  Files left out are counted, never named.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import Callable

#: the longest diff shown (the rest is cut, and said to be)
DIFF_CAP = 400_000
#: new files diffed at most (the rest are only named)
NEW_FILES_MAX = 50
#: how long git may take
GIT_TIMEOUT = 15.0
#: git's empty tree: what a repository without a commit is compared with
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.quotepath=false", "-c", "color.ui=false",
         "-c", "diff.external=", "-c", "core.pager=cat")


@dataclass(frozen=True)
class Diff:
    """The work tree's changes as the asker may see them."""

    #: the unified diff ("" when nothing changed that they may see)
    diff: str = ""
    #: the changed files they may see, relative to the repository's top
    files: tuple[str, ...] = ()
    #: changed files left out because their task could not read them
    hidden: int = 0
    #: the diff was longer than ``DIFF_CAP`` and was cut
    cut: bool = False
    #: the folder is in a git repository
    repo: bool = True


def _git(cwd: str, *args: str, ok: tuple[int, ...] = (0,)) -> bytes | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        proc = subprocess.run(["git", *_SAFE, *args], cwd=cwd, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=GIT_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode in ok else None


def _names(raw: bytes | None) -> list[str]:
    return [n.decode("utf-8", "surrogateescape") for n in (raw or b"").split(b"\0") if n]


def changes(cwd: str, allowed: Callable[[str], bool], cap: int = DIFF_CAP) -> Diff:
    """The changes of the git work tree holding ``cwd``; ``allowed(path)`` (absolute)
    says whether the asker may see a file."""
    top_raw = _git(cwd, "rev-parse", "--show-toplevel")
    if top_raw is None:
        return Diff(repo=False)
    top = top_raw.decode("utf-8", "surrogateescape").strip()
    base = "HEAD" if _git(top, "rev-parse", "--verify", "--quiet", "HEAD") is not None \
        else EMPTY_TREE
    tracked = _names(_git(top, "diff", base, "--name-only", "-z", "--no-renames"))
    new = _names(_git(top, "ls-files", "--others", "--exclude-standard", "-z"))
    shown_tracked = [n for n in tracked if allowed(os.path.join(top, n))]
    shown_new = [n for n in new if allowed(os.path.join(top, n))]
    hidden = len(tracked) + len(new) - len(shown_tracked) - len(shown_new)
    parts: list[bytes] = []
    if shown_tracked:
        # ``--`` and ``:(literal)``: a file named like an option or a pathspec is that file
        parts.append(_git(top, "diff", base, "--no-ext-diff", "--no-textconv", "--no-renames",
                          "--", *(f":(literal){n}" for n in shown_tracked)) or b"")
    for name in shown_new[:NEW_FILES_MAX]:
        if sum(map(len, parts)) > cap:
            break
        # a new file against nothing (exit 1: they differ)
        parts.append(_git(top, "diff", "--no-index", "--no-ext-diff", "--no-textconv", "--",
                          os.devnull, name, ok=(0, 1)) or b"")
    data = b"".join(parts)
    cut = len(data) > cap
    text = data[:cap].decode("utf-8", "replace")
    if cut:
        text = text[:text.rfind("\n") + 1]
    return Diff(text, tuple(shown_tracked + shown_new), hidden, cut)


__all__ = ["DIFF_CAP", "Diff", "changes"]
