"""Entry of both twins: ``main(["hook" | "statusline", *flags])``.

The compiled executables exec this (stage 2) as
``python -S -I -c BOOT <site-dir> hook [--forwarded]``; the fallback scripts
installed without a compiler call it too.
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    which = argv[0] if argv else "hook"
    if which == "statusline":
        from aipager.hookpy import statusline

        return statusline.main(argv[1:])
    from aipager.hookpy import hook

    return hook.main(argv[1:])
