"""What a surface does with a ``Files`` output, the chat and the page alike: each checked
copy under a name of the surface's own (``files.own_name``: the chat removes its name once
uploaded, the page keeps its own for downloads), and what is not sent."""

from __future__ import annotations

from aipager import files
from aipager.port.outputs import FileCopy, FileRefusal, Files


def own_copies(out: Files) -> tuple[list[tuple[FileCopy, str]], list[FileRefusal]]:
    """Each copy with the path of this surface's own name for it; the refusals: the
    daemon's, then a copy gone before it could be named (``path``: its file name)."""
    mine: list[tuple[FileCopy, str]] = []
    refused = list(out.refused)
    for copy in out.copies:
        try:
            mine.append((copy, files.own_name(copy.path)))
        except files.FileRefused as exc:
            refused.append(FileRefusal(copy.filename, "gone", str(exc)))
    return mine, refused


__all__ = ["own_copies"]
