"""The keystrokes that answer Claude Code's dialogs, proven on the real TUI.

Every answer here is typed exactly as ``tests/fixtures/tui_keys.json`` says (the fixture
drives the test): one ``dtach -p`` write per step, ``between_keys_s`` apart, the first one
``settle_s`` after the dialog showed.  Each scenario then checks the tool_result the fake
model receives next — the answer the user meant, and nothing else.

A scenario runs several dialogs in one session.  To tell the k-th dialog from an earlier one
still in the screen log, a watcher notes how long the log was when each PreToolUse datagram
arrived (the hook runs before Claude Code draws the dialog for that call); the dialog text
is looked for only after that point.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from typing import Any

import pytest

from e2e.kit.dtachs import _ANSI, _CURSOR_RIGHT
from e2e.kit.questions import COLOUR, SIZE, TOPPINGS
from fakes import anthropic as fa
from support.tuikeys import KEYS, expand

pytestmark = pytest.mark.e2e


PERM = KEYS["permission"]
QUEST = KEYS["question"]
PLAN = KEYS["plan"]
NO_PLAN = PLAN["without_plan_file"]
INTERRUPTED = "Interrupted · What should Claude do instead?"



# -- the fixture's step language ------------------------------------------------------------

def press(tui, action: dict[str, Any], *, more: bool = False, **params: Any) -> None:
    """Type ``action``'s steps into the dialog on screen, paced as the fixture says.

    The first action on a dialog waits ``settle_s`` first; ``more=True`` goes on within the
    same dialog (next question, review tab) at the ``between_keys_s`` pace only, as a bot
    typing a whole answer in one go would.
    """
    timing = KEYS["timing"]
    if not more:
        time.sleep(timing["settle_s"])
    for data in expand(action["steps"], params):
        tui.push(data)
        time.sleep(timing["between_keys_s"])


# -- watching the session --------------------------------------------------------------------

def _clean(raw: bytes) -> str:
    raw = _CURSOR_RIGHT.sub(lambda m: b" " * int(m.group(1) or 1), raw)
    return _ANSI.sub(b"", raw).decode("utf-8", errors="replace")


def _squash(text: str) -> str:
    return "".join(text.split())


class Watch:
    """Follows one TUI session: screen log since a point, tool calls, tool_results."""

    def __init__(self, tui, hook_socket, fake, key: str) -> None:
        self.tui, self.hooks, self.fake, self.key = tui, hook_socket, fake, key
        self.call_marks: list[int] = []  # log size when each PreToolUse arrived
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            n = len(self.hooks.hook_events("PreToolUse"))
            while len(self.call_marks) < n:
                self.call_marks.append(self.size())
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop = True
        self._thread.join(2)

    def size(self) -> int:
        try:
            return os.path.getsize(self.tui.log)
        except FileNotFoundError:
            return 0

    def since(self, mark: int) -> str:
        with open(self.tui.log, "rb") as fh:
            fh.seek(mark)
            return _clean(fh.read())

    def wait_text(self, text: str, mark: int, timeout: float = 40.0) -> None:
        """Wait until ``text`` is drawn after log position ``mark``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _squash(text) in _squash(self.since(mark)):
                return
            time.sleep(0.05)
        tail = self.since(mark)[-2500:]
        raise AssertionError(f"{text!r} not drawn within {timeout} s; screen since mark:\n{tail}")

    def dialog(self, call: int, *texts: str, timeout: float = 40.0) -> str:
        """Wait for the dialog of tool call number ``call`` (1-based) showing ``texts``."""
        deadline = time.monotonic() + timeout
        while len(self.call_marks) < call:
            if time.monotonic() > deadline:
                raise AssertionError(f"tool call {call} never came; got {self.hooks.names()}")
            time.sleep(0.05)
        for text in texts:
            self.wait_text(text, self.call_marks[call - 1], timeout)
        return self.since(self.call_marks[call - 1])

    def dialog_again(self, call: int, title: str, *texts: str, timeout: float = 40.0) -> str:
        """The dialog of tool call ``call`` (1-based) that shows again the dialog of the call
        before it: ``texts`` drawn since this call, and ``title`` since the call before (the
        terminal may leave the unchanged title row as it was instead of drawing it again)."""
        shown = self.dialog(call, *texts, timeout=timeout)
        assert _squash(title) in _squash(self.since(self.call_marks[call - 2])), title
        return shown

    def results(self) -> list[str]:
        """Every tool_result the model was sent so far, in order, as text."""
        seen: dict[str, str] = {}
        for req in self.fake.requests_with(self.key):
            for block in req.tool_results():
                seen.setdefault(block["tool_use_id"], _text(block.get("content")))
        return list(seen.values())

    def result(self, n: int, timeout: float = 20.0) -> str:
        """The ``n``-th tool_result (1-based), waiting for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.results()
            if len(got) >= n:
                return got[n - 1]
            time.sleep(0.05)
        raise AssertionError(f"tool_result {n} never reached the model; got {self.results()}")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content or "")


@pytest.fixture
def watch(hook_socket, fake_anthropic):
    watches: list[Watch] = []

    def make(tui, key: str) -> Watch:
        w = Watch(tui, hook_socket, fake_anthropic, key)
        watches.append(w)
        return w

    yield make
    for w in watches:
        w.stop()


@pytest.fixture(autouse=True)
def _short_reply_wait(claude_home):
    """Nobody answers the hook's reply wait: Claude Code draws its dialog after 1 s."""
    claude_home.extra_env["AIPAGER_PERMISSION_REPLY_DEADLINE"] = "1"


def _ask(*questions: dict[str, Any]) -> fa.Reply:
    return fa.tool("AskUserQuestion", {"questions": list(questions)})


def _answered(*pairs: tuple[str, str]) -> str:
    return ", ".join(f'"{q}"="{a}"' for q, a in pairs)


# -- permission dialogs ---------------------------------------------------------------------

def test_bash_permission_allow_keys_and_deny_with_reason(dtach_session, fake_anthropic,
                                                         hook_socket, claude_home, watch):
    proj = claude_home.project
    actions = PERM["actions"]
    fake_anthropic.script(
        "E2E-KEYS-BASH",
        fa.bash("touch one"), fa.bash("touch two"), fa.bash("touch three"),
        fa.bash("python3 -c \"open('four', 'w')\""),
        fa.bash("python3 -c \"open('five', 'w')\""),  # allowed by the rule "2" saved
        fa.text("Bash keys done."),
    )
    tui = dtach_session("--permission-mode", "default")
    w = watch(tui, "E2E-KEYS-BASH")
    tui.type("E2E-KEYS-BASH go")

    # 1: "1" is enough
    w.dialog(1, PERM["variants"]["bash"]["shown"], PERM["footer"], "touch one", "4. No")
    press(tui, actions["allow"])
    assert w.result(1) == actions["allow"]["result"]["bash"]
    # 2: Enter alone takes the preselected Yes
    w.dialog(2, PERM["variants"]["bash"]["shown"], "touch two")
    press(tui, actions["allow_enter"])
    assert w.result(2) == actions["allow_enter"]["result"]["bash"]
    # 3: up (wraps to No), tab, the reason, enter: not run, the model hears why, turn goes on
    w.dialog(3, PERM["variants"]["bash"]["shown"], "touch three")
    press(tui, actions["deny_with_reason"], reason="name it differently")
    third = w.result(3)
    assert actions["deny_with_reason"]["result"].format(reason="name it differently") in third
    assert "The tool use was rejected" in third
    # 4: "2" answers yes and saves Bash(python3 *) for the project
    shown = w.dialog(4, PERM["variants"]["bash"]["shown"], "don’t ask again for: python3 *")
    assert "always allow access" not in shown
    press(tui, actions["allow_always"])
    w.result(4)
    # 5 ran without a dialog, thanks to the saved rule
    w.result(5)
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Bash keys done."

    for name, made in (("one", True), ("two", True), ("three", False), ("four", True),
                       ("five", True)):
        assert os.path.exists(os.path.join(proj, name)) == made, name
    asked = [e["tool_input"]["command"] for e in hook_socket.hook_events("PermissionRequest")]
    assert asked == ["touch one", "touch two", "touch three", "python3 -c \"open('four', 'w')\""]
    with open(os.path.join(proj, ".claude", "settings.local.json"), encoding="utf-8") as fh:
        assert json.load(fh)["permissions"]["allow"] == ["Bash(python3 *)"]


def test_bash_permission_esc_and_no_deny_and_interrupt(dtach_session, fake_anthropic,
                                                       hook_socket, claude_home, watch):
    proj = claude_home.project
    actions = PERM["actions"]
    fake_anthropic.script("E2E-KEYS-ESC", fa.bash("touch esc"), fa.text("never said"))
    fake_anthropic.script("E2E-KEYS-NO", fa.bash("touch no"), fa.text("never said"))
    fake_anthropic.script("E2E-KEYS-AFTER", fa.text("Understood."))
    tui = dtach_session("--permission-mode", "default")
    w = watch(tui, "E2E-KEYS-ESC")
    tui.type("E2E-KEYS-ESC go")

    w.dialog(1, PERM["variants"]["bash"]["shown"], "touch esc")
    press(tui, actions["deny"])
    w.wait_text(INTERRUPTED, w.call_marks[0])
    assert w.results() == []  # the turn stopped: the model was not asked again
    tui.type("E2E-KEYS-NO next")

    w.dialog(2, PERM["variants"]["bash"]["shown"], "touch no")
    press(tui, actions["deny_by_option"])
    w.wait_text(INTERRUPTED, w.call_marks[1])
    tui.type("E2E-KEYS-AFTER what now")

    # each rejection reached the model with the next prompt
    assert actions["deny"]["result"] in w.result(1)
    assert actions["deny_by_option"]["result"] in w.result(2)
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Understood."
    assert not os.path.exists(os.path.join(proj, "esc"))
    assert not os.path.exists(os.path.join(proj, "no"))
    assert not hook_socket.hook_events("PostToolUse")


def test_write_and_edit_permission_keys(dtach_session, fake_anthropic, hook_socket,
                                        claude_home, watch):
    proj = claude_home.project
    actions = PERM["actions"]
    first, second, third = (os.path.join(proj, n) for n in ("first.txt", "second.txt", "third.txt"))
    edited = os.path.join(proj, "edit.txt")
    with open(edited, "w", encoding="utf-8") as fh:
        fh.write("alpha\n")
    fake_anthropic.script(
        "E2E-KEYS-FILES",
        fa.tool("Write", {"file_path": first, "content": "one\n"}),
        fa.tool("Edit", {"file_path": edited, "old_string": "alpha", "new_string": "beta"}),
        fa.tool("Write", {"file_path": second, "content": "two\n"}),
        fa.tool("Write", {"file_path": third, "content": "three\n"}),  # accept-edits: no dialog
        fa.text("File keys done."),
    )
    tui = dtach_session("--permission-mode", "default")
    w = watch(tui, "E2E-KEYS-FILES")
    tui.type("E2E-KEYS-FILES go")

    write_options = PERM["variants"]["write"]["options"]
    w.dialog(1, PERM["variants"]["write"]["shown"].format(file="first.txt"), PERM["footer"],
             *write_options)
    press(tui, actions["allow"])
    assert actions["allow"]["result"]["write"].format(file_path=first) in w.result(1)

    w.dialog(2, PERM["variants"]["edit"]["shown"].format(file="edit.txt"), PERM["footer"],
             *PERM["variants"]["edit"]["options"])
    press(tui, actions["deny_with_reason"], reason="keep alpha")
    assert actions["deny_with_reason"]["result"].format(reason="keep alpha") in w.result(2)

    w.dialog(3, PERM["variants"]["write"]["shown"].format(file="second.txt"))
    press(tui, actions["allow_always"])
    assert actions["allow_always"]["result"]["write"].format(file_path=second) in w.result(3)
    w.wait_text("⏵⏵ accept edits on", w.call_marks[2])
    w.result(4)
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "File keys done."

    for path, content in ((first, "one\n"), (second, "two\n"), (third, "three\n"),
                          (edited, "alpha\n")):
        with open(path, encoding="utf-8") as fh:
            assert fh.read() == content, path
    asked = [e["tool_name"] for e in hook_socket.hook_events("PermissionRequest")]
    assert asked == ["Write", "Edit", "Write"]


# -- AskUserQuestion ------------------------------------------------------------------------

def test_single_select_question_keys(dtach_session, fake_anthropic, hook_socket, watch):
    single = QUEST["single_select"]
    fake_anthropic.script("E2E-KEYS-Q1", *[_ask(COLOUR)] * 5, fa.text("never said"))
    fake_anthropic.script("E2E-KEYS-Q1-AFTER", fa.text("Fine."))
    tui = dtach_session("--permission-mode", "default")
    w = watch(tui, "E2E-KEYS-Q1")
    tui.type("E2E-KEYS-Q1 ask me")
    chosen = QUEST["results"]["chosen"]
    q = COLOUR["question"]

    # a digit picks directly
    w.dialog(1, q, QUEST["shown"], "4. Type something.", "5. Chat about this")
    press(tui, single["pick"], i=2)
    assert chosen.format(question=q, label="Blue") in w.result(1)
    # down × i, enter
    w.dialog(2, q, QUEST["shown"])
    press(tui, single["pick_by_arrows"], i=1)
    assert chosen.format(question=q, label="Red") in w.result(2)
    w.dialog(3, q, QUEST["shown"])
    press(tui, single["pick_by_arrows"], i=0)
    assert chosen.format(question=q, label="Green") in w.result(3)
    # free text: down × n to "Type something.", the words, enter
    w.dialog(4, q, QUEST["shown"])
    press(tui, single["type"], n=3, text="3 shades of purple")
    assert QUEST["results"]["typed"].format(question=q, text="3 shades of purple") in w.result(4)
    # esc declines and ends the turn
    w.dialog(5, q, QUEST["shown"])
    press(tui, QUEST["actions"]["decline"])
    w.wait_text("Declined to answer Claude's questions", w.call_marks[4])
    assert len(w.results()) == 4
    tui.type("E2E-KEYS-Q1-AFTER never mind")
    declined = w.result(5)
    assert "doesn't want to proceed" in declined and "Blue" not in declined
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Fine."
    for text in w.results()[:4]:  # one answer per call
        assert text.count('"=') == 1, text


def test_question_chat_about_this(dtach_session, fake_anthropic, hook_socket, watch):
    fake_anthropic.script("E2E-KEYS-CHAT", _ask(COLOUR), fa.text("What should I clarify?"))
    tui = dtach_session("--permission-mode", "default")
    w = watch(tui, "E2E-KEYS-CHAT")
    tui.type("E2E-KEYS-CHAT ask me")

    w.dialog(1, COLOUR["question"], "5. Chat about this")
    chat = QUEST["actions"]["chat"]
    press(tui, chat, n=3)
    assert chat["result"] in w.result(1)
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "What should I clarify?"


def test_multi_select_question_keys(dtach_session, fake_anthropic, hook_socket, watch):
    multi = QUEST["multi_select"]
    fake_anthropic.script("E2E-KEYS-QM", _ask(TOPPINGS), _ask(TOPPINGS), fa.text("Toppings noted."))
    tui = dtach_session("--permission-mode", "default")
    w = watch(tui, "E2E-KEYS-QM")
    tui.type("E2E-KEYS-QM ask me")
    q = TOPPINGS["question"]

    # toggle options 0 and 2, tab to the review tab, enter submits
    w.dialog(1, q, "1. [ ] Cheese", "Submit", "✔ Submit")
    press(tui, multi["toggle"], picks=[0, 2])
    press(tui, multi["next"], more=True)
    press(tui, QUEST["review"]["submit"], more=True)  # the whole answer in one go
    assert QUEST["results"]["multi"].format(question=q, label_a="Cheese", label_b="Olives") \
        in w.result(1)
    w.wait_text(QUEST["review"]["shown"], w.call_marks[0])

    # one option and a typed one: down × n, the words, down to Submit, enter, then review
    w.dialog(2, q, "1. [ ] Cheese")
    press(tui, multi["toggle"], picks=[1])
    press(tui, multi["type"], more=True, n=3, text="Pineapple")
    press(tui, multi["next_from_text"], more=True)
    w.wait_text(QUEST["review"]["shown"], w.call_marks[1])
    press(tui, QUEST["review"]["submit"], more=True)
    assert QUEST["results"]["typed"].format(question=q, text="Ham, Pineapple") in w.result(2)
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Toppings noted."


def test_two_questions_keys(dtach_session, fake_anthropic, hook_socket, watch):
    single, multi, review = QUEST["single_select"], QUEST["multi_select"], QUEST["review"]
    fake_anthropic.script("E2E-KEYS-Q2", _ask(COLOUR, SIZE), _ask(TOPPINGS, COLOUR),
                          _ask(COLOUR, SIZE), fa.text("never said"))
    fake_anthropic.script("E2E-KEYS-Q2-AFTER", fa.text("Both noted."))
    tui = dtach_session("--permission-mode", "default")
    w = watch(tui, "E2E-KEYS-Q2")
    tui.type("E2E-KEYS-Q2 ask me")

    # a pick moves on to the next question by itself; after the last, the review tab
    w.dialog(1, COLOUR["question"], "☐ Colour", "☐ Size", "✔ Submit")
    press(tui, single["pick"], i=1)
    # (no wait for the Size question's text: the TUI redraws only the cells that changed,
    # so "Which size should it be?" never appears whole; the settle before the next keys
    # covers the switch)
    press(tui, single["pick_by_arrows"], more=True, i=2)
    w.wait_text(review["shown"], w.call_marks[0])
    w.wait_text("Submit answers", w.call_marks[0])
    press(tui, review["submit"], more=True)
    assert QUEST["results"]["chosen_many"].format(
        question1=COLOUR["question"], label1="Red", question2=SIZE["question"], label2="Large"
    ) in w.result(1)

    # a multiSelect question first: toggles, tab to the next question, pick, review, enter
    w.dialog(2, TOPPINGS["question"], "Next")
    press(tui, multi["toggle"], picks=[0, 2])
    press(tui, multi["next"], more=True)
    press(tui, single["pick"], more=True, i=0)
    press(tui, review["submit"], more=True)  # the whole answer in one go
    assert _answered((TOPPINGS["question"], "Cheese, Olives"), (COLOUR["question"], "Green")) \
        in w.result(2)
    w.wait_text(review["shown"], w.call_marks[1])

    # Cancel on the review tab declines the whole call and ends the turn
    w.dialog(3, COLOUR["question"])
    press(tui, single["pick"], i=2)
    press(tui, single["pick"], more=True, i=0)
    w.wait_text(review["shown"], w.call_marks[2])
    press(tui, review["cancel"], more=True)
    w.wait_text("Declined to answer Claude's questions", w.call_marks[2])
    assert len(w.results()) == 2
    tui.type("E2E-KEYS-Q2-AFTER never mind")
    declined = w.result(3)
    assert "doesn't want to proceed" in declined and "Small" not in declined
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Both noted."


# -- ExitPlanMode ---------------------------------------------------------------------------

_PLAN_AT = re.compile(r"create your plan at (/[^\s\\]+?\.md)")


def _write_plan(req: fa.Request) -> fa.Reply:
    """Write the plan where the plan-mode reminder says (ExitPlanMode reads it from there)."""
    found = _PLAN_AT.search(req.text())
    assert found, "the plan-mode reminder names no plan file"
    return fa.tool("Write", {"file_path": found.group(1),
                             "content": "# Plan\n\n1. Paint the button.\n2. Check it.\n"})


def _exit_plan() -> fa.Reply:
    return fa.tool("ExitPlanMode", {})


def test_plan_feedback_then_approve(dtach_session, fake_anthropic, hook_socket, watch):
    actions = PLAN["actions"]
    fake_anthropic.script("E2E-KEYS-PLAN", _write_plan, _exit_plan(), _exit_plan(),
                          fa.text("Planned and approved."))
    tui = dtach_session("--permission-mode", "plan")
    w = watch(tui, "E2E-KEYS-PLAN")
    tui.type("E2E-KEYS-PLAN paint it")

    w.dialog(2, PLAN["shown"], PLAN["question"], "Paint the button.", *PLAN["options"])
    press(tui, actions["keep_planning_with_feedback"], feedback="add a test step")
    assert actions["keep_planning_with_feedback"]["result"].format(feedback="add a test step") \
        in w.result(2)
    w.dialog_again(3, PLAN["shown"], PLAN["question"])
    press(tui, actions["approve_manual"])
    approved = w.result(3)
    assert actions["approve_manual"]["result"] in approved and "Paint the button." in approved
    w.wait_text("⏸ manual mode on", w.call_marks[2])
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Planned and approved."


def test_plan_esc_keeps_planning_then_approve_auto(dtach_session, fake_anthropic, hook_socket,
                                                   watch):
    actions = PLAN["actions"]
    fake_anthropic.script("E2E-KEYS-PLANESC", _write_plan, _exit_plan(), fa.text("never said"))
    fake_anthropic.script("E2E-KEYS-PLANAGAIN", _exit_plan(), fa.text("Approved in auto mode."))
    tui = dtach_session("--permission-mode", "plan")
    w = watch(tui, "E2E-KEYS-PLANESC")
    tui.type("E2E-KEYS-PLANESC paint it")

    w.dialog(2, PLAN["shown"], PLAN["question"])
    press(tui, actions["keep_planning"])
    w.wait_text("Rejected Claude's plan", w.call_marks[1])
    assert len(w.results()) == 1  # the plan Write only: the turn stopped
    tui.type("E2E-KEYS-PLANAGAIN try again")

    assert actions["keep_planning"]["result"] in w.result(2)
    w.dialog(3, PLAN["shown"], PLAN["question"])
    press(tui, actions["approve_auto"])
    assert actions["approve_auto"]["result"] in w.result(3)
    w.wait_text("⏵⏵ auto mode on", w.call_marks[2])
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Approved in auto mode."


def test_plan_without_plan_file(dtach_session, fake_anthropic, hook_socket, watch):
    approve = NO_PLAN["actions"]["approve"]
    fake_anthropic.script("E2E-KEYS-NOPLAN", fa.tool("ExitPlanMode", {"plan": "ignored"}),
                          fa.text("Out of plan mode."))
    tui = dtach_session("--permission-mode", "plan")
    w = watch(tui, "E2E-KEYS-NOPLAN")
    tui.type("E2E-KEYS-NOPLAN go")

    w.dialog(1, NO_PLAN["shown"], NO_PLAN["text"], *NO_PLAN["options"])
    press(tui, approve)
    assert approve["result"] in w.result(1)
    w.wait_text("⏸ manual mode on", w.call_marks[0])
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Out of plan mode."
