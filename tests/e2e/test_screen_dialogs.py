"""The dialogs of the real Claude Code 2.1.328 as the daemon's screen watcher reads them
(``daemon.screenwatch`` + ``daemon.screen``): a Write's and an Edit's permission dialog, a
question's picker.  Each is recorded as a fixture (``tests/fixtures/screens/``) with
``AIPAGER_E2E_RECORD=1`` and read back here: which dialog, its choices, which is selected.
Esc leaves each one (the dialog is gone from the screen, the input line is back)."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from e2e.kit.questions import COLOUR
from fakes import anthropic as fa
from support.screens import FOLDER

from aipager.daemon import screen
from aipager.daemon.screenwatch import ScreenWatch

pytestmark = pytest.mark.e2e

ESC = b"\x1b"
#: read when the module loads: the suite's fixtures clear every AIPAGER_* variable
RECORD = os.environ.get("AIPAGER_E2E_RECORD") == "1"


def _record(name: str, rows: list[str]) -> None:
    if RECORD:
        with open(os.path.join(FOLDER, f"{name}.json"), "w", encoding="utf-8") as fh:
            json.dump({"lines": [r.rstrip() for r in rows]}, fh, ensure_ascii=False, indent=0)


async def _until(watch: ScreenWatch, want, timeout: float = 40.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        seen = screen.read(watch.rows())
        if want(seen):
            return seen
        await watch.changed(0.3)
    raise AssertionError("the screen never showed it:\n" + "\n".join(watch.rows()))


def test_write_edit_and_question_dialogs_read_off_the_real_screen(dtach_session, fake_anthropic,
                                                                   claude_home):
    target = os.path.join(claude_home.project, "notes.txt")
    with open(target, "w") as fh:
        fh.write("old line\n")
    fake_anthropic.script("E2E-SCR-WRITE", fa.tool("Write", {"file_path": os.path.join(
        claude_home.project, "new.txt"), "content": "hello\n"}), fa.text("w"))
    fake_anthropic.script("E2E-SCR-EDIT", fa.tool("Edit", {"file_path": target,
                                                            "old_string": "old line",
                                                            "new_string": "new line"}),
                          fa.text("e"))
    fake_anthropic.script("E2E-SCR-ASK", fa.tool("AskUserQuestion", {"questions": [COLOUR]}),
                          fa.text("q"))
    tui = dtach_session("--permission-mode", "default")

    async def run() -> None:
        watch = ScreenWatch(tui.socket)
        await watch.start()
        try:
            await _until(watch, lambda s: isinstance(s, screen.Prompt))
            for key, name, check in (
                    ("E2E-SCR-WRITE", "permission_write", _is_write),
                    ("E2E-SCR-EDIT", "permission_edit", _is_edit),
                    ("E2E-SCR-ASK", "question", _is_question)):
                await asyncio.to_thread(tui.type, f"{key} go")
                seen = await _until(watch, lambda s: isinstance(s, screen.Dialog))
                _record(name, watch.rows())
                check(seen)
                # (the TUI draws a dialog a moment before it reads keys: pressed again if
                # nothing happened)
                for _ in range(5):
                    await asyncio.to_thread(tui.push, ESC)
                    try:
                        await _until(watch, lambda s: isinstance(s, screen.Prompt)
                                     and s.typed == "", 3.0)
                        break
                    except AssertionError:
                        continue
                else:
                    raise AssertionError("Esc never left the dialog")
        finally:
            await watch.close()

    asyncio.run(run())


def _is_write(seen: screen.Dialog) -> None:
    assert seen.kind == screen.Kind.PERMISSION, seen
    assert seen.selected == 0 and seen.options[0] == "Yes" and seen.options[-1] == "No", seen


def _is_edit(seen: screen.Dialog) -> None:
    assert seen.kind == screen.Kind.PERMISSION, seen
    assert seen.selected == 0 and seen.options[0] == "Yes" and seen.options[-1] == "No", seen
    assert "notes.txt" in seen.text


def _is_question(seen: screen.Dialog) -> None:
    assert seen.kind == screen.Kind.OTHER, seen  # answered by the question's own keys
    assert [o for o in seen.options if "Green" in o or "Red" in o or "Blue" in o], seen
    assert "Which colour should the button be?" in seen.text
