"""``python -m bench``: run every registered benchmark module and print a table.

A benchmark module lives in this package and exposes ``run(args) -> list[dict]``
(one row per contender and case) plus optionally ``add_arguments(parser)``.
Register it in ``MODULES``; a listed module that does not exist yet is
skipped, so entries can land before their files.  Row keys the table knows:
group, case, contender, p50_ms, p95_ms, x_true, x_python, rss_kb,
delivered (datagrams per run), runs; anything else is shown with --json.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import sys

#: benchmark modules, in the order they run
MODULES = ("bench.hook", "bench.policy", "bench.ingest", "bench.bot", "bench.permission", "bench.typing",
           "bench.crash", "bench.hub", "bench.voice", "bench.light", "bench.page", "bench.fleet")

COLUMNS = (
    ("case", "{}", 34),
    ("contender", "{}", 22),
    ("p50_ms", "{:.3f}", 9),
    ("p95_ms", "{:.3f}", 9),
    ("x_true", "{:.2f}", 7),
    ("x_python", "{:.2f}", 9),
    ("rss_kb", "{:.0f}", 8),
    ("delivered", "{:.2f}", 10),
    ("x_clock", "{:.2f}", 8),
)


def available() -> dict:
    found = {}
    for name in MODULES:
        if importlib.util.find_spec(name) is not None:
            found[name.rsplit(".", 1)[1]] = importlib.import_module(name)
    return found


def table(rows: list[dict]) -> str:
    lines = []
    group = None
    for row in rows:
        if row.get("group") != group:
            group = row.get("group")
            lines.append("")
            lines.append(f"== {group}")
            lines.append("  ".join(name.rjust(width) if i > 1 else name.ljust(width)
                                   for i, (name, _fmt, width) in enumerate(COLUMNS)))
        if "p50_ms" not in row:
            # a module with its own figures: show them as they are
            lines.append("  " + ", ".join(f"{k}={v}" for k, v in row.items() if k != "group"))
            continue
        cells = []
        for i, (name, fmt, width) in enumerate(COLUMNS):
            value = row.get(name)
            text = "-" if value is None else fmt.format(value)
            cells.append(text.rjust(width) if i > 1 else text[:width].ljust(width))
        lines.append("  ".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    modules = available()
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--only", help=f"comma-separated subset of: {', '.join(modules)}")
    parser.add_argument("--rounds", type=int, default=31, help="measured rounds (default 31)")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured rounds first (default 3)")
    parser.add_argument("--json", action="store_true", help="one JSON row per line instead of a table")
    for module in modules.values():
        if hasattr(module, "add_arguments"):
            module.add_arguments(parser)
    args = parser.parse_args(argv)
    chosen = args.only.split(",") if args.only else list(modules)
    unknown = [name for name in chosen if name not in modules]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    rows: list[dict] = []
    for name in chosen:
        for row in modules[name].run(args):
            row.setdefault("group", name)
            rows.append(row)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        import aipager

        where = os.path.dirname(os.path.abspath(aipager.__file__))
        print(f"python {platform.python_version()} on {platform.machine()}, {args.rounds} rounds, "
              f"aipager from {where}")
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
