"""Entry of both twins: ``main(["hook" | "statusline", *flags])``.

The compiled executables exec BOOT (stage 2) as
``python -S -I -c BOOT <site-dir> hook [--forwarded] --capped``; the fallback
scripts installed without a compiler call ``run`` too.
"""

from __future__ import annotations

import posix
import sys

#: what the native binary passes to ``python -S -I -c`` (setup.py bakes this
#: very string into it): argv[1] is the site dir holding aipager.  With the
#: install-time bundle (``hot``) the hot-path modules load from one file; a
#: missing, foreign or broken bundle means plain imports from the site dir.
#: When even that fails (a broken install), it exits with ``--fail-exit`` (the
#: native side's policy_fail_exit: 2, a refusal, for a PreToolUse) and one
#: line on stderr, which Claude Code shows.
BOOT = (
    "import sys\n"
    "p = sys.argv[1]\n"
    "if p:\n"
    "    sys.path.append(p)\n"
    "    try:\n"
    "        with open(p + '/aipager/hookpy/_hot.bin', 'rb') as f:\n"
    "            h = f.read()\n"
    "        if h[:4] == sys.modules['_frozen_importlib_external'].MAGIC_NUMBER:\n"
    "            import marshal\n"
    "            h = marshal.loads(memoryview(h)[4:])\n"
    "            g = {'__name__': 'aipager.hookpy._hot'}\n"
    "            exec(h[0], g)\n"
    "            g['install'](h[1], p)\n"
    "    except Exception:\n"
    "        pass\n"
    "try:\n"
    "    from aipager.hookpy.entry import run\n"
    "    run(sys.argv[2:])\n"
    "except Exception as e:\n"
    "    from posix import _exit, write\n"
    "    f = [a[12:] for a in sys.argv if a[:12] == '--fail-exit=']\n"
    "    f = int(f[0]) if f and f[0].isdigit() else 1\n"
    "    m = 'aipager-hook: cannot run (%s); check the install with: aipager doctor' % type(e).__name__\n"
    "    if f == 2:\n"
    "        m = 'aipager safety policy: ' + m + '; the tool call is refused to be safe'\n"
    "    write(2, m.encode() + b'\\n')\n"
    "    _exit(f)\n"
)


def main(argv: list[str]) -> int:
    which = argv[0] if argv else "hook"
    if which == "statusline":
        from aipager.hookpy import statusline

        return statusline.main(argv[1:])
    from aipager.hookpy import hook

    return hook.main(argv[1:])


def run(argv: list[str]) -> None:
    """``main``, then leave at once with its exit code.

    Why ``_exit``: tearing the interpreter down (module dicts, GC) measured
    ~2-3 ms on the test machine, paid while Claude Code waits.  Nothing is
    lost by skipping it: the twins write files and sockets through ``posix``
    descriptors, never buffered Python files; only the standard streams are
    flushed here.
    """
    code = main(argv)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: Claude Code stopped reading, the exit code still counts
    posix._exit(code if isinstance(code, int) else 0)
