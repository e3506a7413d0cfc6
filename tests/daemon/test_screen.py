"""Reading what a session's terminal shows (``daemon.screen``) on screens recorded from the
real Claude Code 2.1.328, and answering a dialog by what the screen shows
(``Daemon.answer_dialog``, the service's trust answer and its held prompts)."""

from __future__ import annotations

import asyncio
import os

import pytest
from fakes.sessionio import FakeSessions
from support.screens import DOWN, ENTER, UP, at_trust_dialog, rows

from aipager.daemon import screen
from aipager.daemon.app import Daemon
from aipager.daemon.service import Service
from aipager.port.commands import SendPrompt, TrustFolder
from aipager.port.results import Declined, Ended, Held, Trusted, Typed
from aipager.port.rights import Reason
from aipager.port.who import Person

S = "claude-jim"

OWNER = Person(1, "@owner", "owner", never_held=True)
MEMBER = Person(43, "@bob", "user", may_approve=False, may_manage=False)


async def _released(sess) -> None:
    """Wait until the held message of ``sess`` is released (the chat types it then)."""
    for _ in range(60):
        if sess.queue and sess.queue[0].status != "held":
            break
        await asyncio.sleep(0.05)
    assert [m.status for m in sess.queue] == ["typed"]


def test_the_trust_dialog_opens_on_no_exit():
    seen = screen.read(rows("trust"))
    assert isinstance(seen, screen.Dialog) and seen.kind == screen.Kind.TRUST
    assert seen.options == ("No, exit", "Yes, I trust this folder") and seen.selected == 0
    assert screen.trust_choice(seen, yes=True) == 1 and screen.trust_choice(seen, yes=False) == 0
    assert screen.choose(seen, 1) == [DOWN]
    moved = screen.read(rows("trust_yes_selected"))
    assert isinstance(moved, screen.Dialog) and moved.selected == 1
    assert screen.choose(moved, 0) == [UP] and screen.choose(moved, 1) == []


def test_a_permission_dialog_its_choices_and_the_input_line():
    seen = screen.read(rows("permission_bash"))
    assert isinstance(seen, screen.Dialog) and seen.kind == screen.Kind.PERMISSION
    assert seen.title == "Bash command" and seen.selected == 0
    assert seen.options[0] == "Yes" and seen.options[-1] == "No" and len(seen.options) == 4
    assert "echo hi > out.txt" in seen.text
    assert screen.read(rows("idle")) == screen.Prompt("")
    assert screen.read(rows("after_esc")) == screen.Prompt("")
    # the input line as typed: what the terminal echoed
    typed = screen.read(rows("typed"))
    assert isinstance(typed, screen.Prompt) and typed.typed.endswith(" go")


def test_what_is_not_recognised_is_none_and_never_a_dialog():
    assert screen.read([]) is None
    assert screen.read(["loading…", "", ""]) is None
    # a footer without a marked choice (a list, not a dialog) is no dialog
    assert screen.read([" ─" * 20, "   1. a", "   2. b", " Esc to cancel"]) is None
    with pytest.raises(ValueError):
        screen.choose(screen.read(rows("trust")), 5)  # type: ignore[arg-type]


def test_a_wrapped_long_choice_is_one_choice():
    drawn = [" " + "─" * 40, " Bash command", " Do you want to proceed?", " ❯ 1. Yes",
             "   2. Yes, and always allow access to /a/very/long/folder/name",
             "      from this project", "   3. No", "", " Esc to cancel · Tab to amend"]
    seen = screen.read(drawn)
    assert isinstance(seen, screen.Dialog) and len(seen.options) == 3
    assert seen.options[1].endswith("name from this project")


@pytest.fixture
def rig():
    sessions = FakeSessions()
    sessions.live.add(S)
    daemon = Daemon(dict(os.environ), session_io=sessions)
    sess = daemon.core.registry.ensure(S)
    sess.socket_seen, sess.cwd = True, "/srv/app"
    yield daemon, sessions, Service(daemon, lambda: "/srv")
    daemon.journal.close()


async def test_yes_moves_onto_yes_then_presses_enter(rig):
    daemon, sessions, service = rig
    at_trust_dialog(sessions, S)
    assert await service.ask(TrustFolder(OWNER, S, yes=True)) == Trusted(S, "/srv/app")
    assert [k for _, ks in sessions.keys for k in ks] == [DOWN, ENTER]
    assert S in sessions.live and sessions.screens[S] == rows("idle")


async def test_yes_when_yes_is_already_selected_is_just_enter(rig):
    daemon, sessions, service = rig
    at_trust_dialog(sessions, S)
    sessions.screens[S] = rows("trust_yes_selected")
    assert await service.ask(TrustFolder(OWNER, S, yes=True)) == Trusted(S, "/srv/app")
    assert [k for _, ks in sessions.keys for k in ks] == [ENTER]


async def test_no_key_goes_where_the_screen_shows_no_trust_dialog(rig):
    daemon, sessions, service = rig
    for shown in (rows("idle"), rows("permission_bash"), None):
        if shown is None:
            sessions.screens.pop(S, None)
        else:
            sessions.screens[S] = shown
        got = await service.ask(TrustFolder(OWNER, S, yes=True))
        assert got == Declined(Reason.NO_TRUST_DIALOG, S)
    assert sessions.keys == []


async def test_a_message_at_the_trust_dialog_is_never_typed_and_its_author_told(rig):
    daemon, sessions, service = rig
    at_trust_dialog(sessions, S)
    for who in (MEMBER, OWNER):
        got = await service.ask(SendPrompt(who, S, "hello", msg_id=7, chat_id=1))
        assert got == Declined(Reason.TRUST_FIRST, S)
    assert sessions.typed == [] and sessions.keys == [] and S in sessions.live


async def test_a_dialog_no_hook_announced_holds_a_message_until_it_closes(rig):
    """A teammate's dialog in the lead's terminal: the state says ready, the screen says a
    dialog is up; the message waits rather than answering it."""
    daemon, sessions, service = rig
    sessions.screens[S] = rows("permission_bash")
    got = await service.ask(SendPrompt(OWNER, S, "hello", msg_id=8, chat_id=1))
    assert isinstance(got, Held) and got.until == "dialog"
    assert sessions.typed == []
    sessions.screens[S] = rows("idle")
    assert isinstance(await service.ask(SendPrompt(OWNER, S, "again", msg_id=9, chat_id=1)),
                      Typed)


async def test_the_held_message_is_released_once_the_screen_shows_no_dialog(rig):
    daemon, sessions, service = rig
    sessions.screens[S] = rows("permission_bash")
    assert isinstance(await service.ask(SendPrompt(OWNER, S, "later", msg_id=10, chat_id=1)),
                      Held)
    sess = daemon.core.registry.get(S)
    assert [m.status for m in sess.queue] == ["held"]
    sessions.screens[S] = rows("idle")
    await _released(sess)  # released: the chat types it now


def test_write_edit_and_question_dialogs_as_recorded():
    """Recorded from the real 2.1.328 by tests/e2e/test_screen_dialogs.py."""
    for name, title in (("permission_write", "Create file"), ("permission_edit", "Edit file")):
        seen = screen.read(rows(name))
        assert isinstance(seen, screen.Dialog) and seen.kind == screen.Kind.PERMISSION
        assert seen.title == title and seen.selected == 0
        assert seen.options[0] == "Yes" and seen.options[-1] == "No" and len(seen.options) == 3
    asked = screen.read(rows("question"))
    assert isinstance(asked, screen.Dialog) and asked.kind == screen.Kind.OTHER
    # a description wraps onto its answer; the rule before "Chat about this" is no end
    assert asked.options == ("Green calm", "Red loud", "Blue cool", "Type something.",
                             "Chat about this")
    assert asked.selected == 0 and "Which colour should the button be?" in asked.text


def test_codex_screens_as_recorded():
    """Recorded from the real Codex 0.169.0 TUI through the daemon's own watcher: its
    first-start dialogs are dialogs, its input line an input line (its placeholder empty)."""
    hooks = screen.read(rows("codex_hooks_review"))
    assert isinstance(hooks, screen.Dialog) and hooks.kind == screen.Kind.OTHER
    assert hooks.title == "Hooks need review" and hooks.selected == 0
    assert hooks.options[1] == "Trust all and continue"
    offer = screen.read(rows("codex_model_offer"))
    assert isinstance(offer, screen.Dialog) and offer.options == ("Try new model",
                                                                  "Use existing model")
    assert screen.read(rows("codex_idle")) == screen.Prompt("")
    assert screen.read(rows("codex_typed")) == screen.Prompt("hello therehello there")


async def test_a_message_for_codex_at_its_first_start_dialog_waits(rig):
    """Codex's "Hooks need review" (or its model offer) is up: Enter would pick an answer.
    The message is held until the screen shows Codex's input line."""
    daemon, sessions, service = rig
    daemon.core.registry.get(S).coding_agent = "codex"
    sessions.screens[S] = rows("codex_hooks_review")
    got = await service.ask(SendPrompt(OWNER, S, "hello", msg_id=11, chat_id=1))
    assert isinstance(got, Held) and got.until == "dialog"
    assert sessions.typed == [] and sessions.keys == []
    sessions.screens[S] = rows("codex_idle")
    sess = daemon.core.registry.get(S)
    await _released(sess)


def test_codexs_folder_trust_dialog_is_a_trust_dialog():
    """Recorded from the real Codex 0.169.0 in a git project it never trusted: "Trust and
    continue" is selected as it opens (an Enter trusts the folder); it has no "no"."""
    seen = screen.read(rows("codex_trust"))
    assert isinstance(seen, screen.Dialog) and seen.kind == screen.Kind.TRUST
    assert seen.options == ("Trust and continue", "Back to Agent Command Center")
    assert seen.selected == 0 and screen.trust_choice(seen, yes=True) == 0
    with pytest.raises(ValueError, match="no 'No' choice"):
        screen.trust_choice(seen, yes=False)


async def test_a_message_for_codex_at_its_trust_dialog_is_never_typed(rig):
    daemon, sessions, service = rig
    daemon.core.registry.get(S).coding_agent = "codex"
    sessions.screens[S] = rows("codex_trust")
    got = await service.ask(SendPrompt(OWNER, S, "hello", msg_id=12, chat_id=1))
    assert got == Declined(Reason.TRUST_FIRST, S)
    assert sessions.typed == [] and sessions.keys == []


async def test_codexs_trust_answered_yes_presses_enter_on_trust_and_no_ends_it(rig):
    daemon, sessions, service = rig
    sess = daemon.core.registry.get(S)
    sess.coding_agent = "codex"
    sessions.screens[S] = rows("codex_trust")
    assert await service.ask(TrustFolder(OWNER, S, yes=True)) == Trusted(S, "/srv/app")
    assert [k for _, ks in sessions.keys for k in ks] == [ENTER]
    sessions.keys.clear()
    ended = []
    daemon.kill_session = lambda label: ended.append(label) or asyncio.sleep(0, True)
    assert isinstance(await service.ask(TrustFolder(OWNER, S, yes=False)), Ended)
    assert sessions.keys == [] and ended == ["jim"]  # no key: ending it is the no


async def test_a_message_for_a_start_whose_screen_is_unreadable_waits_for_its_input_line(
        rig, monkeypatch):
    """A program still starting whose screen is not recognised (a dialog of a version not
    read yet, a splash): nothing is typed into it; the message goes in once the input line
    shows."""
    monkeypatch.setattr("aipager.daemon.service.STARTING_WAIT", 0.2)
    daemon, sessions, service = rig
    sess = daemon.core.registry.get(S)
    sess.coding_agent = "codex"
    sessions.screens[S] = ["  Something new", "  › 1. Go on", "  enter whatever"]
    got = await service.ask(SendPrompt(OWNER, S, "hello", msg_id=13, chat_id=1))
    assert got == Held(S, "start")
    assert sessions.typed == [] and sessions.keys == []
    assert [(m.status, m.held_for) for m in sess.queue] == [("held", "start")]
    sessions.screens[S] = rows("codex_idle")
    await _released(sess)  # released: the chat types it now
