"""Recording real event sequences for the daemon's replay tests.

``AIPAGER_E2E_RECORD=1 pytest tests/e2e`` writes, per scenario that calls :func:`record`,
``tests/fixtures/sequences/<name>.jsonl``: one line per datagram, byte for byte as the hook
delivered it, in arrival order.  Without the variable nothing is written.
"""

from __future__ import annotations

import os

SEQUENCES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sequences")
# Read at import: the autouse isolation fixture removes AIPAGER_* variables per test.
_RECORDING = os.environ.get("AIPAGER_E2E_RECORD") == "1"


def record(name: str, raw: list[bytes]) -> str | None:
    """Write ``raw`` datagrams as ``<name>.jsonl`` when recording; return the path."""
    if not _RECORDING:
        return None
    path = os.path.normpath(os.path.join(SEQUENCES_DIR, f"{name}.jsonl"))
    with open(path, "wb") as fh:
        for data in raw:
            # A datagram is one JSON document; a raw newline inside would break the format.
            assert b"\n" not in data, "datagram contains a raw newline"
            fh.write(data + b"\n")
    return path
