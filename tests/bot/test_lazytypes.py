"""aiogram imported with its models built on use (``aipager.lazyaiogram``)."""

from __future__ import annotations

import subprocess
import sys

from aipager import lazyaiogram as lazytypes

PROBE = """
{setup}
from aiogram.types import Update
from aiogram.methods import GetChat, SendMessage
from aiogram.methods.base import Response
Update.model_validate({{"update_id": 1, "callback_query": {{"id": "q", "chat_instance": "c",
    "from": {{"id": 1, "is_bot": False, "first_name": "a"}}, "data": "r:1:allow"}}}})
chat = {{"id": 1, "type": "private", "accent_color_id": 0, "max_reaction_count": 11,
        "accepted_gift_types": {{"unlimited_gifts": False, "limited_gifts": False,
        "unique_gifts": False, "premium_subscription": False, "gifts_from_channels": False}}}}
Response[GetChat.__returning__].model_validate({{"ok": True, "result": chat}})
print(repr(SendMessage(chat_id=1, text="x").model_dump(exclude_none=True)))
"""


def _run(setup: str) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE.format(setup=setup)], capture_output=True,
                          text=True, timeout=120, check=True)
    return done.stdout


def test_this_process_runs_the_deferred_way():
    assert lazytypes._state["lazy"] is True


def test_deferred_and_eager_imports_validate_alike():
    # (what the deferring saves is measured by ``python -m bench --only bot``)
    lazy_out = _run("import aipager.bot")
    eager_out = _run("import aiogram.types, aiogram.methods")
    assert lazy_out == eager_out
    assert "'text': 'x'" in lazy_out
