"""The shared layer imports the standard library and nothing else from outside aipager (issue 15).

The shared layer, the package ``aipager.proto`` (``paths``, ``wire``, ``jsonlite``,
``spoolfile``, ``errors``, ``fsio``, ``fsnames``, ``trust``), holds the protocol pieces the hook
twins, the daemon and its clients share.  Who of aipager's may import whom
(this layer nothing of aipager's beyond itself, the hook twins and the policy neither the
daemon nor the chat, ...) is import-linter's: the contracts in pyproject.toml, checked by
``tests/test_checks.py``.  What a contract cannot say is "the standard library only", so that
stays here; the layer's hot paths keep to builtin modules, which ``test_hot_path_os_free``
checks.

Read from the source with ``ast`` (imports inside functions count too).
"""

from __future__ import annotations

import ast
import pathlib
import sys

import aipager

PROTO = pathlib.Path(aipager.__file__).parent / "proto"


def _imports(path: pathlib.Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_the_shared_layer_imports_nothing_but_the_standard_library_from_outside_aipager():
    modules = sorted(PROTO.glob("*.py"))
    assert {m.stem for m in modules} >= {"paths", "wire", "jsonlite", "spoolfile", "errors"}
    for module in modules:
        for imported in _imports(module):
            inside = imported == "aipager.proto" or imported.startswith("aipager.proto.")
            top = imported.split(".")[0]
            assert inside or top == "__future__" or top in sys.stdlib_module_names, \
                f"proto/{module.name} imports {imported}"
