"""Naming a file kept next to another (a backup, a damaged file set aside)."""

from __future__ import annotations

import itertools
import os


def unused_name(stem: str) -> str:
    """``stem``, else ``stem-2``, ``stem-3``…: the first name where nothing exists.

    A dangling symlink counts as taken: writing there would follow it.
    """
    return next(name for n in itertools.count(1)
                if not os.path.lexists(name := stem if n == 1 else f"{stem}-{n}"))
