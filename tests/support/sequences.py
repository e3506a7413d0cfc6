"""Replaying Claude Code event sequences (tests/fixtures/sequences) and a hand-driven clock."""

from __future__ import annotations

import json
import pathlib

SEQUENCES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "sequences"


class FakeClock:
    """Wall clock the test moves by hand."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def load_sequence(name: str) -> list[dict]:
    """Events of a recorded sequence.

    ``.jsonl``: one datagram (as the hook forwards it) per line;
    ``.json``: ``{"description": ..., "events": [datagram, ...]}``.
    """
    path = SEQUENCES / name
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return json.loads(path.read_text())["events"]


def sequence_names() -> list[str]:
    return sorted(p.name for p in SEQUENCES.iterdir() if p.suffix in (".json", ".jsonl"))
