"""The measured dialog keys of Claude Code's TUI (``tests/fixtures/tui_keys.json``) and the
interpreter of its step language: one reading for the e2e proof on the real TUI and for the
unit test that holds ``aipager.daemon.dialogkeys`` to it."""

from __future__ import annotations

import json
import os
from typing import Any

FIXTURE_PATH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures",
                            "tui_keys.json")
with open(FIXTURE_PATH, encoding="utf-8") as _fh:
    KEYS = json.load(_fh)


def expand(steps: list[dict[str, Any]], params: dict[str, Any]) -> list[bytes]:
    """The writes a list of fixture steps stands for, parameters filled in."""
    writes: list[bytes] = []
    for step in steps:
        if "key" in step:
            writes.append(KEYS["keys"][step["key"]].encode())
        elif "digit" in step:
            writes.append(step["digit"].encode())
        elif "option_digit" in step:
            writes.append(str(params[step["option_digit"]] + 1).encode())
        elif "repeat" in step:
            times = step["times"]
            times = params[times] if isinstance(times, str) else times
            writes += [KEYS["keys"][step["repeat"]].encode()] * times
        elif "text" in step:
            text = step["text"].format(**params)
            assert "\r" not in text and "\n" not in text
            writes.append(text.encode())
        elif "each" in step:
            for value in params[step["each"]]:
                writes += expand(step["steps"], {**params, step["as"]: value})
        else:
            raise AssertionError(f"unknown step {step}")
    return writes
