"""The daemon's saved state as plain JSON values, for the commands that show it
(``status``, ``doctor``, ``page``, ``hub``): read from its file, so it works with the
daemon stopped."""

from __future__ import annotations

import dataclasses
from typing import Any

from aipager.proto import paths


def _plain(value: Any) -> Any:
    """The daemon's state as JSON-ready data, whatever shape it comes in."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def load_state(env: dict[str, str]) -> tuple[Any, str | None]:
    try:
        from aipager.daemon.persist import load_state
    except ImportError:
        return None, "the daemon's saved state is not readable by this build yet"
    try:
        return _plain(load_state(env)), None
    except Exception as exc:  # noqa: BLE001 - the state file is the daemon's; never crash status on it
        return None, f"cannot read the daemon's state ({paths.daemon_state_file(env)}): {exc}"
