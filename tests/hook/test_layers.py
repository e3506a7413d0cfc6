"""The import layers (issue 15): who may import whom.

- the shared layer (``paths``, ``wire``, ``jsonlite``, ``spoolfile``, ``errors``): protocol
  pieces both the hook twins and the daemon use; the standard library only (their hot paths
  keep to builtin modules, which ``test_hot_path_os_free`` checks), nothing of aipager's
  beyond each other;
- the hook twins (``hookpy``) run the policy (``policy``); the policy never imports the hook;
- the daemon and the chat never import the hook twins (they share the protocol through the
  shared layer).

Read from the source with ``ast`` (imports inside functions count too).
"""

from __future__ import annotations

import ast
import pathlib
import sys

import aipager

ROOT = pathlib.Path(aipager.__file__).parent
SHARED = ("paths", "wire", "jsonlite", "spoolfile", "errors")


def _imports(path: pathlib.Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            if node.module == "aipager":
                found.update(f"aipager.{alias.name}" for alias in node.names)
    return found


def _modules(folder: str) -> list[pathlib.Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_the_shared_layer_imports_the_standard_library_and_itself_only():
    allowed = {f"aipager.{name}" for name in SHARED} | {"aipager", "__future__"}
    for name in SHARED:
        for imported in _imports(ROOT / f"{name}.py"):
            top = imported.split(".")[0]
            assert imported in allowed or top in sys.stdlib_module_names, \
                f"{name}.py imports {imported}"


def test_the_policy_never_imports_the_hook_twins():
    for path in _modules("policy"):
        bad = [m for m in _imports(path) if m.startswith("aipager.hookpy")]
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_the_daemon_and_the_chat_never_import_the_hook_twins():
    for path in _modules("daemon") + _modules("bot"):
        bad = [m for m in _imports(path) if m.startswith("aipager.hookpy")]
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
