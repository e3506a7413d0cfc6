"""The static checks, run with the tests: ruff, mypy and import-linter (lint-imports).

Their settings live in pyproject.toml.  Each tool runs as a subprocess from the repository
root on the checkout's source tree, never on the installed package the other tests import,
and is the one installed next to the interpreter running the tests (the ``test`` extra).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
BIN = Path(sys.executable).parent


def _check(tool: str, *args: str) -> None:
    """Run ``tool`` from the root of the checkout; fail with its output unless it exits 0."""
    program = BIN / tool
    if not program.exists():
        pytest.fail(f"{program} is missing: install the test extra (pip install '.[test]')", pytrace=False)
    # The checkout first on the path: lint-imports builds its graph from whichever aipager
    # imports first, and the installed copy must not be the one it reads.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([str(program), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    if done.returncode != 0:
        pytest.fail(f"{tool} {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}",
                    pytrace=False)


def test_ruff() -> None:
    _check("ruff", "check", "--no-cache", "--output-format=concise", ".")


def test_mypy() -> None:
    # the packages come from [tool.mypy] files
    _check("mypy")


def test_import_contracts() -> None:
    _check("lint-imports", "--config", "pyproject.toml", "--no-cache")


#: finds the circles of aipager's imports (function-local imports included: an import
#: moved into a function to dodge a circle is still one); run on the checkout like the rest
_CIRCLES = """
import sys, grimp
graph = grimp.build_graph("aipager", exclude_type_checking_imports=True)
index, low, stack, on, circles = {}, {}, [], set(), []
sys.setrecursionlimit(20000)
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in graph.find_modules_directly_imported_by(v):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        part = []
        while True:
            w = stack.pop()
            on.discard(w)
            part.append(w)
            if w == v:
                break
        if len(part) > 1:
            circles.append(sorted(part))
for module in sorted(graph.modules):
    if module not in index:
        visit(module)
for part in circles:
    print(" <-> ".join(part))
sys.exit(1 if circles else 0)
"""


def test_no_module_imports_itself_through_others() -> None:
    """No circle of imports between aipager's modules, however local the import: a circle
    hidden in a function still ties the modules together."""
    _check("python", "-c", _CIRCLES)
