"""Fixtures for the end-to-end suite on the real Claude Code.

Layers, each a fixture a scenario asks for by name:

- ``fake_anthropic``  — the scripted model (``fakes.anthropic.FakeAnthropic``) on 127.0.0.1.
- ``fake_telegram``   — the fake Bot API (``fakes.telegram_api.FakeBotAPI``) on 127.0.0.1,
                        served from a thread; the owner has a private chat with the bot.
                        Scenarios "type" with ``say`` and "tap" with ``tap``.
- ``claude_home``     — throwaway HOME/project/instance folder, first-run dialogs answered,
                        ``settings.json`` wired to the installed ``aipager-hook``.
- ``hook_socket``     — a bare datagram socket where the daemon's would be (hook scenarios).
- ``daemon``          — ``aipager start`` instead, read back via ``aipager status --json``;
                        its bot polls ``fake_telegram``.
- ``run_claude_p``    — ``claude -p`` against the fake, returns a ``PrintRun``.
- ``dtach_session``   — factory for interactive Claude Code sessions in dtach.

Daemon scenarios swap ``hook_socket`` for a running daemon, whose bot talks to the fake
Bot API (its URL in the daemon's ``AIPAGER_TELEGRAM_API_BASE``).
"""

from __future__ import annotations

import shutil
from typing import Any, Callable, Iterator

import pytest

from e2e.kit import claude as kit
from e2e.kit.daemon import Daemon, write_config
from e2e.kit.dtachs import CliSession, DtachSession
from e2e.kit.hooksock import HookSocket
from e2e.kit.runner import PrintRun, run_print
from fakes.anthropic import FakeAnthropic
from fakes.telegram_api import OWNER, FakeBotAPI


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic()
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def fake_telegram() -> Iterator[FakeBotAPI]:
    """The fake Bot API in a thread (the daemon is another process); ``.base`` is its URL."""
    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    with fake.in_thread():
        yield fake


@pytest.fixture
def hook_programs() -> tuple[str, str]:
    """Absolute paths of the installed ``aipager-hook`` and ``aipager-statusline``."""
    return kit.installed_program("aipager-hook"), kit.installed_program("aipager-statusline")


@pytest.fixture
def claude_home(hook_programs: tuple[str, str]) -> Iterator[kit.ClaudeHome]:
    kit.claude_binary()  # fail early and clearly when Claude Code is missing
    home = kit.make_home()
    kit.wire_hooks(home, *hook_programs)
    yield home
    _end_sessions_under(home.root)
    shutil.rmtree(home.root, ignore_errors=True)


def _end_sessions_under(root: str) -> None:
    """End every dtach session whose socket is under ``root`` (the ones the daemon started
    for ``/new`` or the page outlive it, each a Claude Code of some 200 MB): its master and
    what runs under it, by their pids."""
    import glob
    import os
    import signal
    import time

    from aipager import dtach

    pids: set[int] = set()
    for sock in glob.glob(os.path.join(root, "**", "claude-dtach-*.sock"), recursive=True):
        masters = dtach.socket_holders(sock)
        pids |= masters | set(dtach.descendants(masters))
    pids.discard(os.getpid())  # (never the test run itself)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in sorted(pids):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        if sig == signal.SIGTERM and pids:
            time.sleep(0.5)


@pytest.fixture
def hook_socket(claude_home: kit.ClaudeHome) -> Iterator[HookSocket]:
    sock = HookSocket(claude_home.socket_path())
    yield sock
    sock.close()


@pytest.fixture
def daemon(claude_home: kit.ClaudeHome, fake_telegram: FakeBotAPI,
           fake_anthropic: FakeAnthropic) -> Iterator[Daemon]:
    """``aipager start`` running for ``claude_home`` (instead of ``hook_socket``).

    Its bot polls ``fake_telegram``; sessions it starts (``/new``) run the suite's Claude
    Code against ``fake_anthropic``, as the harness's own sessions do.
    """
    write_config(claude_home)
    proc = Daemon.for_chat(claude_home, fake_telegram.base, fake_anthropic.base_url)
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture
def run_claude_p(
    claude_home: kit.ClaudeHome, fake_anthropic: FakeAnthropic
) -> Callable[..., PrintRun]:
    """``run_claude_p(prompt, **kw)`` — see ``e2e.kit.runner.run_print`` for the options."""

    def run(prompt: str, **kw: Any) -> PrintRun:
        return run_print(claude_home, fake_anthropic.base_url, prompt, **kw)

    return run


@pytest.fixture
def dtach_session(
    claude_home: kit.ClaudeHome, fake_anthropic: FakeAnthropic
) -> Iterator[Callable[..., DtachSession]]:
    """Factory: ``dtach_session(*claude_args, cli=False)`` starts Claude Code's TUI in dtach.

    ``cli=True`` creates it with ``aipager session NAME --detached`` (no screen log).
    """
    started: list[DtachSession] = []

    def start(*claude_args: str, cli: bool = False) -> DtachSession:
        kind = CliSession if cli else DtachSession
        session = kind(claude_home, fake_anthropic.base_url, list(claude_args))
        started.append(session)
        session.start()
        return session

    yield start
    for session in started:
        session.stop()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report on the test item, so a fixture can tell a failed test apart."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
