"""Every compiled twin names its Python twin, function by function, and both exist.

Each ``_fasthook/*.pxi`` that mirrors Python code opens with one or more blocks::

    # TWIN OF aipager/policy/_match_py.py:
    #   pol_decide = decide

naming a ``cdef`` function of that file and the module-level function (or
``Class.method``) it mirrors.  A rename on either side without the other fails here.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FASTHOOK = ROOT / "_fasthook"
BLOCK = re.compile(r"^# TWIN OF (\S+\.py):\n((?:#   \w+ = [\w.]+\n)+)", re.M)
PAIR = re.compile(r"^#   (\w+) = ([\w.]+)$", re.M)
#: files that mirror Python code (their header says "twin of", or has a block)
TWINS = sorted(p.name for p in FASTHOOK.glob("*.pxi")
               if "twin of" in p.read_text(encoding="utf-8")[:1500].lower())


def _python_names(path: pathlib.Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            names.update(f"{node.name}.{item.name}" for item in node.body
                         if isinstance(item, ast.FunctionDef))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            # a function made by a factory (``status_file = _session_file(...)``)
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_the_files_that_mirror_python_are_found():
    assert {"match.pxi", "floor.pxi", "hookside.pxi", "pickup.pxi", "sendfile.pxi", "json.pxi",
            "memcap.pxi", "send.pxi", "forward.pxi", "reply.pxi", "paths.pxi"} <= set(TWINS)


@pytest.mark.parametrize("name", TWINS)
def test_the_twin_block_names_functions_that_exist_on_both_sides(name):
    source = (FASTHOOK / name).read_text(encoding="utf-8")
    blocks = BLOCK.findall(source)
    assert blocks, f"{name} says it is a twin but has no '# TWIN OF <module>.py:' block"
    c_functions = set(re.findall(r"^cdef [^\n(]*?\**(\w+)\(", source, re.M))
    for module, pairs in blocks:
        python = _python_names(ROOT / module)
        for c_name, py_name in PAIR.findall(pairs):
            assert c_name in c_functions, f"{name}: no cdef {c_name}"
            assert py_name in python, f"{name}: {module} has no {py_name}"
