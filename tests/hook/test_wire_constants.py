"""The compiled side and Python agree on every value they share.

setup.py generates ``wire_constants.h`` from the Python sources at build time
(``WIRE_CONSTANTS`` and the tables in ``wire_constants_h``), and the header
carries a stamp: every "module:ATTRIBUTE" it was generated from, with its
value, as JSON.  The hook executables keep that stamp (main.c) and
``aipager._policy_c`` returns it, so these tests compare what was compiled
in with the Python that is installed: a stale build, or a value copied by
hand, fails here.  The size limit is also checked by behaviour, and the
sources are checked for hand copies of the generated values.
"""

from __future__ import annotations

import importlib
import json
import os
import re

import pytest
from support import hookrun

from aipager import native
from aipager.proto import wire
from aipager.daemon import drain

PREFIX = b"aipager-wire:"
FASTHOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "_fasthook")


def plain(value):
    """``value`` as the stamp holds it (setup.py ``_plain``): tuples and sets as lists."""
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def stamp_of(blob: bytes) -> dict:
    start = blob.index(PREFIX) + len(PREFIX)
    return json.loads(blob[start:blob.index(b"\0", start)])


def python_value(source: str):
    module, attribute = source.split(":")
    return plain(getattr(importlib.import_module(module), attribute))


def assert_agrees(stamp: dict) -> None:
    assert "aipager.proto.wire:MAX_DATAGRAM" in stamp and len(stamp) >= 30, sorted(stamp)
    differ = {source: (built, python_value(source)) for source, built in stamp.items()
              if built != python_value(source)}
    assert not differ, f"built with (left) vs installed Python (right): {differ}"


def test_executables_carry_the_python_values(native_bins: dict) -> None:
    for path in native_bins.values():
        with open(path, "rb") as fh:
            assert_agrees(stamp_of(fh.read()))


@pytest.mark.skipif(native.load("_policy_c") is None, reason="aipager._policy_c not built")
def test_policy_extension_carries_the_python_values() -> None:
    from aipager import _policy_c

    assert_agrees(stamp_of(_policy_c.wire_stamp().encode() + b"\0"))


def test_drain_reads_what_the_wire_allows() -> None:
    assert drain.MAX_DATAGRAM == wire.RECV_MAX > wire.MAX_DATAGRAM
    compiled = native.load("_drain_c")
    if compiled is not None:
        assert compiled.MAX_DATAGRAM == wire.RECV_MAX


def _sized_event(size: int, added: int) -> bytes:
    """A PostToolUse whose datagram (the event + ``added`` spliced bytes) is ``size`` bytes."""
    event = {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Bash", "tool_response": ""}
    # compact, as the twin re-encodes it: one byte over stays one byte over there too
    event["tool_response"] = "x" * (size - added - len(json.dumps(event, separators=(",", ":"))))
    raw = json.dumps(event, separators=(",", ":")).encode()
    assert len(raw) + added == size
    return raw


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-byte-over"])
def test_the_compiled_hook_sends_exactly_up_to_max_datagram(native_bins, over: int) -> None:
    """wire.MAX_DATAGRAM bytes go out from the compiled stage as they are; one more byte
    and it hands over to the twin, which shortens the event to fit."""
    env = hookrun.hook_env()
    probe = _sized_event(1000, 0)
    done, declined = hookrun.run_watched("native", probe, env)
    assert not declined and len(done.raw) == 1
    added = len(done.raw[0]) - len(probe)  # ,"session":"claude-jim" (no status file: no sl_tokens)
    raw = _sized_event(wire.MAX_DATAGRAM + over, added)
    done, declined = hookrun.run_watched("native", raw, env)
    assert declined == bool(over), done.stderr
    assert len(done.raw) == 1 and len(done.raw[0]) <= wire.MAX_DATAGRAM
    if not over:
        assert len(done.raw[0]) == wire.MAX_DATAGRAM and done.raw[0].startswith(raw[:-1])
    else:
        assert "truncated by aipager" in json.loads(done.raw[0])["tool_response"]


def _code(name: str) -> str:
    """A _fasthook source without its comment lines (comments may name a value); C
    preprocessor lines stay."""
    with open(os.path.join(FASTHOOK, name), encoding="utf-8") as fh:
        return "".join(line for line in fh
                       if not line.lstrip().startswith(("#", "/*", "*")) or line.lstrip().startswith("#define"))


@pytest.mark.skipif(native.load("_policy_c") is None, reason="aipager._policy_c not built")
def test_no_generated_value_is_spelled_by_hand() -> None:
    """A value that comes from Python through wire_constants.h appears in no .pxi/.pyx/.c
    as a literal of its own: numbers from 10000 up; names as JSON strings inside C strings,
    file names and prefixes also as C strings or the start of a format."""
    from aipager import _policy_c

    stamp = stamp_of(_policy_c.wire_stamp().encode() + b"\0")
    sources = {name: _code(name) for name in sorted(os.listdir(FASTHOOK))
               if name.endswith((".pxi", ".pyx", ".c")) and name != "wire.pxi"}
    for source, value in stamp.items():
        if isinstance(value, int) and value >= 10000:
            digits = f"{value:_}".replace("_", "_?")
            pattern = rf"(?<![\w.]){digits}(?![\w.])"
        elif isinstance(value, str):
            # a JSON string inside a C string; a file name also as a C string or a format's start
            # (a plain word such as "statusline" also names the twin stage 2 runs)
            text = re.escape(value)
            pattern = rf'\\"{text}\\"' + ("" if value.isidentifier() else rf'|"{text}"|"{text}%')
        else:
            continue
        for name, code in sources.items():
            assert not re.search(pattern, code), f"{name} spells {source} ({value!r}) by hand"
