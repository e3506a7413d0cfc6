"""Latency of aipager-hook / aipager-statusline, native and twin, per real event.

Contenders per case: the installed native executable, the pure-Python twin
started as stage 2 starts it (``python -S -I -c BOOT``), and the floors
``/bin/true`` and ``python -S -I -c pass`` measured in the same rounds.  The
hook runs with a session, a bound receiving socket and the session's status
file in place, so every real path (sl_tokens, splice, send) is exercised.
Targets (issue 2): events up to 5 KB at p50 <= 1.5x /bin/true, status line
<= 2x, peak RSS <= 2 MB.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile

from aipager.proto import paths
from aipager.hookpy import entry
from bench import harness

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "events")
#: Codex 0.169.0's payloads, recorded from the real binary: the same hook serves them
CODEX_FIXTURES = os.path.join(os.path.dirname(FIXTURES), "codex")
SESSION = "claude-bench"


def add_arguments(parser) -> None:
    parser.add_argument("--events", help="hook bench: comma-separated event fixture names (default: all)")
    parser.add_argument("--no-twin", action="store_true", help="hook bench: skip the Python twins")


def _native(tool: str) -> str | None:
    path = os.path.join(os.path.dirname(sys.executable), f"aipager-{tool}")
    return path if os.path.exists(path) else None


def _twin(tool: str) -> list[str]:
    import aipager

    site = os.path.dirname(os.path.dirname(os.path.abspath(aipager.__file__)))
    return [sys.executable, "-S", "-I", "-c", entry.BOOT, site, tool]


def _payloads(folder: str, only: list[str] | None) -> list[tuple[str, str, str]]:
    """(case, tool, payload path): every fixture compact (Claude Code's, then Codex's as
    ``codex:<event>``), plus a 5 KB PostToolUse."""
    out = []
    for source, prefix in ((FIXTURES, ""), (CODEX_FIXTURES, "codex:")):
        for name in sorted(os.listdir(source)):
            case = prefix + name[:-5]
            if only and case not in only:
                continue
            with open(os.path.join(source, name), encoding="utf-8") as fh:
                event = json.load(fh)
            tool = "statusline" if case == "statusline" else "hook"
            path = os.path.join(folder, prefix.rstrip(":") + name)
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(event, fh)
            out.append((case, tool, path))
            if case == "PostToolUse":
                big = dict(event)
                big["tool_response"] = {"stdout": ('line "q" \\ é\n' * 400)[:4800], "stderr": ""}
                path5 = os.path.join(folder, "PostToolUse-5KB.json")
                with open(path5, "w", encoding="utf-8") as fh:
                    json.dump(big, fh)
                out.append(("PostToolUse-5KB", "hook", path5))
    return out


def run(args) -> list[dict]:
    only = args.events.split(",") if getattr(args, "events", None) else None
    sink = harness.Sink()
    env = {"PATH": "/usr/bin:/bin", "AIPAGER_INSTANCE_DIR": sink.dir, "CLAUDE_DTACH_SESSION": SESSION,
           # a PermissionRequest (an Elicitation) would wait up to 20 s (90 s) for a tap
           # nobody sends: measure the hook's own work, as without the reply wait
           "AIPAGER_PERMISSION_REPLY_DEADLINE": "0", "AIPAGER_ELICITATION_REPLY_DEADLINE": "0"}
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="aipager-bench-payloads-") as folder:
        # Claude Code always passes HOME; without it the policy steps decline
        env["HOME"] = folder
        payloads = _payloads(folder, only)
        status = [p for c, _t, p in payloads if c == "statusline"]
        if status:
            with open(status[0], "rb") as src, open(paths.status_file(env, SESSION), "wb") as dst:
                dst.write(src.read())
        try:
            for case, tool, path in payloads:
                contenders = harness.floors()
                native = _native(tool)
                if native:
                    contenders.append(harness.Contender(f"native {tool}", [native]))
                if not getattr(args, "no_twin", False):
                    contenders.append(harness.Contender(f"twin {tool}", _twin(tool)))
                harness.measure(contenders, path, env, sink, args.rounds, args.warmup)
                for c, row in zip(contenders, harness.rows("hook", case, contenders), strict=True):
                    # wait4's ru_maxrss counts the harness itself for a vfork'd
                    # child (reads ~20 MB): prefer /usr/bin/time -v
                    rss = harness.peak_rss_time_v(c.argv, path, env)
                    row["rss_kb"] = rss if rss is not None else statistics.median(c.rss)
                    rows.append(row)
        finally:
            sink.close()
    return rows
