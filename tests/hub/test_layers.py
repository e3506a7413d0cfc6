"""The hub sits beside the chat, above the daemon: the daemon never imports it, it never
imports the chat, and nothing loads the NATS client until a link connects."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import aipager

CHECK = """
import sys
import aipager.hub.port, aipager.hub.host, aipager.hub.link
import aipager.hub.server, aipager.cli.hub_cmd, aipager.main
bad = sorted(m for m in sys.modules if m == "aipager.bot" or m.startswith("aipager.bot."))
assert not bad, bad
assert "nats" not in sys.modules, "nats imported before a link connects"
assert "aiogram" not in sys.modules
"""


def test_the_hub_imports_neither_the_chat_nor_nats_up_front():
    run = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_the_daemon_never_imports_the_hub():
    daemon = pathlib.Path(aipager.__file__).parent / "daemon"
    users = [p.name for p in daemon.rglob("*.py") if "aipager.hub" in p.read_text()]
    assert users == []
