"""Entry of both twins: ``main(["hook" | "statusline", *flags])``.

The compiled executables exec this (stage 2) as
``python -S -I -c BOOT <site-dir> hook [--forwarded] --capped``; the fallback
scripts installed without a compiler call it too.
"""

from __future__ import annotations

#: what the native binary passes to ``python -S -I -c`` (a copy lives in
#: _fasthook/stage2.pxi): argv[1] is the site dir to put first on sys.path
BOOT = (
    "import sys\n"
    "p = sys.argv[1]\n"
    "if p:\n"
    "    sys.path.insert(0, p)\n"
    "from aipager.hookpy.entry import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def main(argv: list[str]) -> int:
    which = argv[0] if argv else "hook"
    if which == "statusline":
        from aipager.hookpy import statusline

        return statusline.main(argv[1:])
    from aipager.hookpy import hook

    return hook.main(argv[1:])
