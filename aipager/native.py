"""The one switch between aipager's compiled parts and their pure-Python twins.

``AIPAGER_NO_EXTENSIONS`` set to anything but ``""`` or ``"0"`` asks for the
Python twins.  It is read here and nowhere else (``disabled``), at two moments:

- **Install time** (``pip install``): ``setup.py`` runs this file by its path and,
  with the switch on, compiles nothing.  ``aipager-hook`` and
  ``aipager-statusline`` are installed as the Python twin scripts
  (``aipager.hookpy``), ``aipager-drain`` is not installed at all, and
  ``aipager._policy_c`` and ``aipager._drain_c`` are not built.
- **Run time** (the daemon, the CLI): every choice between a compiled module
  and its twin goes through ``load`` (or ``disabled``).  That covers the
  PreToolUse matcher (``aipager.policy.match``) and the drain
  (``aipager.daemon.ingest.native_drain_exe`` and ``native_drain_path``).
  With the switch on, both use the Python twin even where the compiled parts
  are installed.  A module that
  was never built, or fails to import, gets the same answer with the switch off.

The hook executables are chosen at install time only.  Claude Code starts
whichever ``aipager-hook`` was installed, and the compiled one reads no switch,
so nothing is added to every event's start.  To run the twins there, reinstall
with the switch on.

Builtins only: ``setup.py`` runs this file before anything is installed.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import ModuleType

#: the environment variable; ``""`` and ``"0"`` leave the compiled parts on
ENV = "AIPAGER_NO_EXTENSIONS"


def disabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``env`` (default: ``os.environ``) switches the compiled parts off."""
    return (os.environ if env is None else env).get(ENV, "") not in ("", "0")


def load(name: str) -> ModuleType | None:
    """The compiled module ``aipager.<name>``, or None for its Python twin.

    None when the switch is on, or when the module was not built (no compiler
    at install time) or cannot be imported.  The twins behave exactly alike;
    they are only slower.
    """
    if disabled():
        return None
    from importlib import import_module

    try:
        return import_module(f"aipager.{name}")
    except ImportError:
        return None
