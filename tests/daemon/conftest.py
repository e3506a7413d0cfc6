"""Fixtures for the daemon tests: a sans-I/O core on a hand-driven clock."""

from __future__ import annotations

import pytest
from support.sequences import FakeClock

from aipager.daemon.core import DaemonCore
from aipager.daemon.knobs import Knobs
from aipager.daemon.notifier import RecordingNotifier


class Answers:
    """Transcript reader fake: path → text."""

    def __init__(self) -> None:
        self.by_path: dict[str, str] = {}

    def __call__(self, path: str) -> str | None:
        return self.by_path.get(path)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def answers() -> Answers:
    return Answers()


@pytest.fixture
def notifier() -> RecordingNotifier:
    return RecordingNotifier()


@pytest.fixture
def make_core(clock, answers, notifier):
    def make(knobs: Knobs | None = None, out: RecordingNotifier | None = None) -> DaemonCore:
        return DaemonCore(out or notifier, knobs=knobs, clock=clock, read_answer=answers,
                          monotonic=clock)

    return make


@pytest.fixture
def core(make_core) -> DaemonCore:
    return make_core()
