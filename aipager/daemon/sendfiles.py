"""The files Claude sends, checked and copied by the daemon once for every surface
(``Ctx.take_files``): the same check the hook made (the floor, secret-shaped names, the
task's rules, the file itself; ``files.take_for_sending``) on what is actually copied, so
a later change cannot swap what goes.  Runs in a worker thread (``emit_completed``).

Each surface names a copy its own as the output reaches it (``files.own_name``: the chat
removes its name once uploaded, the page keeps its own for downloads); the daemon's name
is removed right after (``drop``), so no copy outlives the surfaces that hold it."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from aipager import files
from aipager.port.outputs import FileCopy, FileRefusal, Files, Output
from aipager.proto import fsio

log = logging.getLogger("aipager.daemon")


def take(env: Mapping[str, str], session: str, paths: list[str], cwd: str) -> dict[str, Any]:
    """A ``Files`` output's ``copies`` and ``refused`` for ``paths``; a folder that cannot
    be used refuses them all (said, never lost in silence)."""
    try:
        copies, refused = files.take_for_sending(env, session, list(paths), cwd)
    except Exception:  # noqa: BLE001 - a bad files folder: every file is said refused, logged
        log.exception("copying the files Claude sent in %s failed", session)
        return {"refused": [FileRefusal(p, "unreadable", "could not be copied") for p in paths]}
    return {"copies": [FileCopy(c.path, c.filename, c.photo) for c in copies],
            "refused": [FileRefusal(r["path"], r["code"], r["reason"]) for r in refused]}


def drop(out: Output) -> None:
    """Remove the daemon's own names of a ``Files`` output's copies (every surface has
    named its own by now: notifiers take an output at once)."""
    if isinstance(out, Files):
        for copy in out.copies:
            fsio.unlink_quiet(copy.path)


__all__ = ["drop", "take"]
