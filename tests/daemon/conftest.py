"""Fixtures for the daemon tests: a sans-I/O core on a hand-driven clock."""

from __future__ import annotations

import os

import pytest
from support.daemon_proc import spawn, wait_for
from support.sequences import FakeClock

from aipager.proto import paths

from aipager.daemon.core import DaemonCore
from aipager.daemon.knobs import Knobs
from aipager.port.outputs import RecordingNotifier


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
                          monotonic=clock, read_ax_answer=lambda ident: None)

    return make


@pytest.fixture
def core(make_core) -> DaemonCore:
    return make_core()


@pytest.fixture
def daemon():
    """The real daemon process on this test's isolated instance folder."""
    proc = spawn()
    env = dict(os.environ)
    try:
        wait_for(lambda: os.path.exists(paths.socket_path(env)) or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read().decode()
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            stream.close()
