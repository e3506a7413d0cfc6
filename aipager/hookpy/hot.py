"""The hook's hot-path modules as one marshalled file, loaded without the import system.

Why: stage 2 (``python -S -I -c BOOT``) runs inside a process Claude Code waits
on.  Measured on the test machine, each small module found through ``sys.path``
costs ~0.2-0.4 ms (directory listings, a ``.pyc`` open and stat, unmarshal),
and the twin needs about twenty of them: that alone was most of the gap to the
"<= 1.3x ``python -S -I -c pass``" target.  ``setup.py`` compiles them at
install time into ``aipager/hookpy/_hot.bin``; BOOT reads that one file and
``install`` puts a finder first on ``sys.meta_path`` that executes each module
from its code only when it is imported.

The file: CPython's 4-byte magic number (a foreign interpreter ignores the
file and imports normally), then ``marshal.dumps((loader, table))`` where
``loader`` is this module's own code and ``table`` maps a module name to
``(path relative to the site dir, is_package, marshal.dumps(code))``, or
``(absolute file, None, b"")`` for a C extension (``EXTENSIONS``).  Code is
compiled with ``optimize=2`` (no docstrings: nothing on the hook path reads
them; the bundled modules carry no ``assert``, which ``tests/hook/test_hot.py``
checks).  A module missing from the table still imports from disk: the
packages keep their real ``__path__``.

This module deliberately has no ``from __future__ import annotations``: BOOT
executes it before the finder exists, so that import would go to disk.
"""

#: every aipager module the hook and status-line twins import on any path
#: (tests/hook/test_hot.py runs the whole case table with ONLY this file as the
#: site dir, so a module missing here fails there), plus ``__future__``, which
#: each of them imports at run time for ``from __future__ import annotations``.
MODULES = (
    "__future__",
    "aipager",
    "aipager.proto",
    "aipager.proto.errors",
    "aipager.proto.fsio",
    "aipager.proto.jsonlite",
    "aipager.proto.paths",
    "aipager.proto.spoolfile",
    "aipager.proto.wire",
    "aipager.hookpy",
    "aipager.hookpy.axcode",
    "aipager.hookpy.common",
    "aipager.hookpy.entry",
    "aipager.hookpy.hook",
    "aipager.hookpy.reply",
    "aipager.hookpy.shrink",
    "aipager.hookpy.statusline",
    "aipager.hookpy.transport",
    "aipager.policy",
    "aipager.policy._match_py",
    "aipager.policy.dialect",
    "aipager.policy.floor",
    "aipager.policy.hookside",
    "aipager.policy.marker",
    "aipager.policy.notes",
    "aipager.policy.rules",
    "aipager.policy.sendfile",
    "aipager.policy.snapshot",
)
#: C extensions the twins import, located at build time: loading them straight
#: from their file skips the search through the standard library's folders
#: (~0.2 ms each measured); a path that no longer exists means the normal search,
#: and one built into the interpreter (no file) is left out
EXTENSIONS = ("_json", "_socket")
#: the bundle's path relative to the site dir
FILE = "aipager/hookpy/_hot.bin"


def install(table, site):
    """Put a finder for ``table``'s modules first on ``sys.meta_path``.

    Args:
        table: name -> (relative path, is_package, marshalled code), as built.
        site: the site dir BOOT got; module ``__file__``s point into it.
    """
    import marshal
    import posix
    import sys

    bootstrap = sys.modules["_frozen_importlib"]  # importlib without importing it
    external = sys.modules["_frozen_importlib_external"]

    class HotFinder:
        """Finds, creates (the default way) and executes bundled modules."""

        @staticmethod
        def find_spec(name, path=None, target=None):
            entry = table.get(name)
            if entry is None:
                return None
            rel, is_package, _code = entry
            if is_package is None:  # a C extension: rel is its file
                try:
                    posix.stat(rel)
                except OSError:
                    return None
                loader = external.ExtensionFileLoader(name, rel)
                spec = bootstrap.ModuleSpec(name, loader, origin=rel)
                spec.has_location = True
                return spec
            origin = rel if rel.startswith("/") else site + "/" + rel
            # has_location stays False: with it, importlib derives __cached__
            # from the origin (string work per module); exec_module sets __file__
            spec = bootstrap.ModuleSpec(name, HotFinder, origin=origin, is_package=is_package)
            if is_package:
                spec.submodule_search_locations.append(origin.rpartition("/")[0])
            return spec

        @staticmethod
        def create_module(spec):
            return None

        @staticmethod
        def exec_module(module):
            module.__file__ = module.__spec__.origin
            exec(marshal.loads(table[module.__name__][2]), module.__dict__)

    sys.meta_path.insert(0, HotFinder)


def source_of(site: str, name: str) -> tuple[str, bool]:
    """``(path relative to site, is_package)`` of the aipager module ``name`` under ``site``."""
    import os

    base = name.replace(".", "/")
    if os.path.exists(os.path.join(site, base, "__init__.py")):
        return base + "/__init__.py", True
    return base + ".py", False


def build(site: str) -> bytes:
    """The bundle for the aipager package under ``site`` (setup.py, at install time).

    Raises:
        OSError: a module's source is missing under ``site``.
    """
    import importlib.util
    import marshal

    table: dict[str, tuple[str, bool | None, bytes]] = {}
    for name in MODULES:
        if name == "__future__":
            import __future__

            path = rel = __future__.__file__
            is_package = False
        else:
            rel, is_package = source_of(site, name)
            path = site + "/" + rel
        with open(path, "rb") as fh:
            source = fh.read()
        # the file name keeps "/aipager/..." so common.error_place reads as from disk
        shown = rel if rel.startswith("/") else "site-packages/" + rel
        code = compile(source, shown, "exec", dont_inherit=True, optimize=2)
        table[name] = (rel, is_package, marshal.dumps(code))
    for name in EXTENSIONS:
        module = importlib.import_module(name)
        file = getattr(module, "__file__", None)
        if file is None:
            continue  # built into this interpreter (Debian's python3: _socket): no search to skip
        table[name] = (file, None, b"")
    with open(__file__, "rb") as fh:
        loader = compile(fh.read(), "site-packages/" + FILE, "exec", dont_inherit=True, optimize=2)
    return importlib.util.MAGIC_NUMBER + marshal.dumps((loader, table))
