"""The one switch between the compiled parts and their Python twins (``aipager.native``).

With ``AIPAGER_NO_EXTENSIONS`` on, the PreToolUse matcher and the daemon's
drain both run their Python twins; off, both run compiled when the build has
them (the drain as the executable ``aipager-drain``, or as ``drain.py`` with
the compiled loop when the daemon is told not to use the executable).  Each
case starts a fresh interpreter (the matcher picks at import) and a real
drain process, as the daemon does.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

from aipager import native

# Read at import, before tests/conftest.py's autouse fixture clears AIPAGER_*:
# a run with AIPAGER_NO_EXTENSIONS=1 installed no compiled parts, on purpose.
NO_NATIVE = native.disabled()
#: the compiled parts are installed, whatever the switch says now
BUILT = all(importlib.util.find_spec(f"aipager.{name}") is not None for name in ("_policy_c", "_drain_c"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: what the matcher and the drain chose, in a fresh interpreter; the drain really
#: started as the daemon starts it, its command line read back from /proc
PROBE = """
import asyncio, json, os, socket
from aipager.policy import match
from aipager.daemon.ingest import DrainIngest

async def drain_argv(executable):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(os.path.join(os.environ["AIPAGER_INSTANCE_DIR"], f"probe{executable}.sock"))
    # argv: <bin>/aipager-drain FD, or python -I -S drain.py FD NATIVE (the compiled
    # loop's file, or "-")
    ingest = DrainIngest(sock, lambda batch: None, executable=executable)
    await ingest.start()
    for _ in range(200):  # until the child has exec'd (a loaded machine reads its fork first)
        with open(f"/proc/{ingest._proc.pid}/cmdline", "rb") as fh:
            argv = [a.decode() for a in fh.read().split(b"\\0") if a]
        if argv and (argv[0].endswith("aipager-drain") or any(a.endswith("drain.py")
                                                               for a in argv)):
            break
        await asyncio.sleep(0.01)
    await ingest.stop()
    return argv

def chose(argv):
    return "exe:" + os.path.basename(argv[0]) if len(argv) == 2 else argv[5]

print(json.dumps({"matcher": match.ENGINE, "compiled_matcher": match._c is not None,
                  "drain": chose(asyncio.run(drain_argv(True))),
                  "drain_module": chose(asyncio.run(drain_argv(False)))}))
"""


def probe(value: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != native.ENV}
    if value is not None:
        env[native.ENV] = value
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env,
                         cwd=os.environ["HOME"], timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize(("value", "off"), [
    (None, False), ("", False), ("0", False), ("1", True), ("yes", True), ("false", True),
])
def test_one_reading_of_the_switch(value, off) -> None:
    """Anything but unset, "" and "0" switches the compiled parts off (as setup.py reads it)."""
    assert native.disabled({} if value is None else {native.ENV: value}) is off


@pytest.mark.parametrize("value", ["1", "yes"])
def test_switch_on_runs_both_twins_in_python(value) -> None:
    got = probe(value)
    assert (got["matcher"], got["compiled_matcher"]) == ("python", False)
    assert got["drain"] == got["drain_module"] == "-", "the drain was compiled"


@pytest.mark.parametrize("value", [None, "", "0"])
def test_switch_off_runs_both_compiled_when_built(value) -> None:
    if not NO_NATIVE:
        assert BUILT, "the compiled parts must be installed (pip install . with a compiler)"
    got = probe(value)
    if BUILT:
        assert (got["matcher"], got["compiled_matcher"]) == ("c", True)
        assert got["drain"] == "exe:aipager-drain", got
        assert re.search(r"_drain_c\.[^/]*\.so$", got["drain_module"]), got
    else:
        assert (got["matcher"], got["drain"], got["drain_module"]) == ("python", "-", "-")


def test_the_switch_is_read_in_one_place() -> None:
    """Only aipager/native.py reads the variable; setup.py runs that file (build time)."""
    readers = []
    for folder, _dirs, files in os.walk(os.path.join(ROOT, "aipager")):
        for name in files:
            if name.endswith((".py", ".pyx", ".pxi")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as fh:
                    if re.search(r"""["']AIPAGER_NO_EXTENSIONS["']""", fh.read()):
                        readers.append(os.path.relpath(path, ROOT))
    assert readers == ["aipager/native.py"]
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as fh:
        setup = fh.read()
    assert not re.search(r"""["']AIPAGER_NO_EXTENSIONS["']""", setup)
    assert '_package_module("aipager/native.py")["disabled"]()' in setup
