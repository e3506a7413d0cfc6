"""Permission requests answered from the chat, on the real Claude Code TUI.

Claude Code (``--permission-mode default``, nothing pre-allowed) asks before each Bash
command; its PermissionRequest hook forwards the request and waits for the daemon's reply
(``AIPAGER_PERMISSION_REPLY_DEADLINE``, 20 s by default).  The bot shows the request with
"✅ Allow", "❌ Deny", "⏹ Stop", "✏️ Edit" (and "🟢 Always allow" when Claude Code offers a rule).

Claude Code 2.1.328 draws its own dialog 0.1–0.4 s after the hook starts, *while* the hook
waits, and keeps it answerable at the terminal: a tap in time closes that dialog through
the hook ("Allowed by PermissionRequest hook"), no key typed.  So the scenarios wait for the
dialog before tapping (a faster tap may beat the drawing; that is luck, not a guarantee).
After the deadline the hook gives up, the dialog stays, and a tap answers it with keys.
"""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from e2e.kit.chat import Phone, buttons, text_of
from e2e.kit.dtachs import drawn
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

SESSION = "claude-e2e"
DIALOG = "Do you want to proceed?"
ASKING = ("--permission-mode", "default")  # nothing pre-allowed: Claude Code asks
#: the reply wait for the scenarios where nobody taps in time
SHORT_DEADLINE = "4"


def _ready(daemon) -> None:
    daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                        "the session ready")


def _request(phone: Phone, detail: str, timeout: float = 30.0) -> dict:
    """The permission message whose command is ``detail`` (with its buttons)."""
    return phone.wait_message(lambda m: detail in text_of(m) and "✅ Allow" in buttons(m),
                              timeout, f"the permission request for {detail!r}")


def _verdict(phone: Phone, message: dict, words: str, timeout: float = 15.0) -> dict:
    """The permission message once edited to its verdict line (buttons gone)."""
    pattern = re.compile(rf"\n{re.escape(words)} by @owner · \d\d:\d\d$")
    return phone.wait(lambda snap: next(
        (m for m in phone.messages(snap) if m["message_id"] == message["message_id"]
         and pattern.search(text_of(m)) and not buttons(m)), None),
        timeout, f"the request edited to {words!r}")


def _task_done(sess: dict) -> bool:
    return bool(sess.get("task") and sess["task"].get("ended_at")) and sess["state"] == "ready"


def test_allow_tap_answers_through_the_hook_and_the_command_runs(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    target = os.path.join(claude_home.project, "allowed")
    fake_anthropic.script("E2E-TALLOW", fa.bash(f"touch {target}"), fa.text("Made it."))
    tui = dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TALLOW make the file")

    request = _request(phone, f"touch {target}")
    # plus Claude Code's own suggestions for this call, each with where it would be kept
    # and ✏️ Edit (the waiting hook can take a corrected command)
    assert {"✅ Allow", "❌ Deny", "⏹ Stop", "✏️ Edit"} <= set(buttons(request)), buttons(request)
    assert all(b.endswith("· this session") for b in set(buttons(request))
               - {"✅ Allow", "❌ Deny", "⏹ Stop", "✏️ Edit"}), buttons(request)
    assert not os.path.exists(target)
    tui.wait_shown(DIALOG)
    dialogs = tui.count(DIALOG)
    query = phone.tap(request, "✅ Allow")

    assert phone.toast(query)["text"] == "Allowed"
    _verdict(phone, request, "✅ Allowed")
    # The hook's decision closed the terminal's dialog: nothing was pressed there.
    tui.wait_shown("Allowed by PermissionRequest hook", 20)
    tui.wait_shown("Made it.", 30)
    assert os.path.exists(target)
    assert tui.count(DIALOG) == dialogs
    sess = daemon.wait_session(_task_done, 20, "the task done")
    assert [(r["summary"], r["status"]) for r in sess["rows"]] == [(f"Bash: touch {target}", "ok")]
    (record,) = [r for r in claude_home.audit() if r["action"] == "permission_answer"]
    assert (record["answer"], record["via"], record["who"]) == ("allow", "hook_decision", "@owner")


def test_deny_tap_refuses_and_the_model_is_told(daemon, dtach_session, fake_anthropic,
                                                fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    target = os.path.join(claude_home.project, "denied")
    fake_anthropic.script("E2E-TDENY", fa.bash(f"touch {target}"), fa.text("Left it alone."))
    tui = dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TDENY make the file")

    request = _request(phone, f"touch {target}")
    tui.wait_shown(DIALOG)
    dialogs = tui.count(DIALOG)
    query = phone.tap(request, "❌ Deny")

    assert phone.toast(query)["text"] == "Denied"
    _verdict(phone, request, "❌ Denied")
    tui.wait_shown("Denied by PermissionRequest hook", 20)
    tui.wait_shown("Left it alone.", 30)
    assert not os.path.exists(target)
    assert tui.count(DIALOG) == dialogs
    results = [b for r in fake_anthropic.requests_with("E2E-TDENY") for b in r.tool_results()]
    assert len(results) == 1 and results[0].get("is_error"), results
    assert "Denied via aipager by @owner" in json.dumps(results[0].get("content")), results
    sess = daemon.wait_session(_task_done, 20, "the task done")
    assert not sess["requests"]


def test_a_reply_to_a_request_denies_it_and_claude_reads_why(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    target = os.path.join(claude_home.project, "reasoned")
    fake_anthropic.script("E2E-TREASON", fa.bash(f"touch {target}"), fa.text("Understood."))
    tui = dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TREASON make the file")

    request = _request(phone, f"touch {target}")
    tui.wait_shown(DIALOG)
    phone.say("not in the project: use /tmp instead", reply_to=request["message_id"])

    _verdict(phone, request, "❌ Denied")
    tui.wait_shown("Understood.", 30)
    assert not os.path.exists(target)
    results = [b for r in fake_anthropic.requests_with("E2E-TREASON") for b in r.tool_results()]
    assert len(results) == 1 and results[0].get("is_error"), results
    assert ("Denied via aipager by @owner: not in the project: use /tmp instead"
            in json.dumps(results[0].get("content"))), results
    (record,) = [r for r in claude_home.audit() if r["action"] == "permission_answer"]
    assert (record["answer"], record["reason"]) == ("deny", "not in the project: use /tmp instead")


def test_an_edited_command_is_what_claude_code_runs(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    """✏️ Edit, then the corrected command: Claude Code runs the call as edited
    (``updatedInput`` through the waiting hook), and the model sees that call's result."""
    phone = Phone(fake_telegram)
    asked, edited = (os.path.join(claude_home.project, n) for n in ("as-asked", "as-edited"))
    fake_anthropic.script("E2E-TEDIT", fa.bash(f"touch {asked}"), fa.text("Edited run done."))
    tui = dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TEDIT make the file")

    request = _request(phone, f"touch {asked}")
    tui.wait_shown(DIALOG)
    phone.tap(request, "✏️ Edit")
    phone.wait_message(lambda m: "Send the corrected command" in text_of(m), 15, "the ask")
    phone.say(f"touch {edited}")

    # the verdict says who edited it and what ran instead
    phone.wait(lambda snap: next(
        (m for m in phone.messages(snap) if m["message_id"] == request["message_id"]
         and not buttons(m) and text_of(m).endswith(
             f", and allowed with this instead:\ntouch {edited}")
         and "\n✏️ Edited by @owner · " in text_of(m)), None), 15, "the verdict")
    tui.wait_shown("Edited run done.", 30)
    assert os.path.exists(edited) and not os.path.exists(asked)
    (record,) = [r for r in claude_home.audit() if r["action"] == "permission_answer"]
    assert record["edited_input"]["command"] == f"touch {edited}"
    assert record["via"] == "hook_decision"


def test_an_edited_write_is_named_as_it_ran_on_the_request_and_the_card(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    """✏️ Edit of a Write to another absolute path: Claude Code writes the file there, and
    the request's verdict and the task's card name that path, saying who edited it (they
    named the path Claude asked for)."""
    phone = Phone(fake_telegram)
    asked = os.path.join(claude_home.project, "as-asked.txt")
    elsewhere = os.path.join(claude_home.root, "elsewhere")
    os.makedirs(elsewhere)
    edited = os.path.join(elsewhere, "as-edited.txt")
    fake_anthropic.script("E2E-TEDITW", fa.tool("Write", {"file_path": asked,
                                                         "content": "hello\n"}),
                          fa.text("Wrote it."))
    tui = dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TEDITW write the file")

    request = phone.wait_message(lambda m: asked in text_of(m) and "✅ Allow" in buttons(m),
                                 30, "the request for the write")
    phone.tap(request, "✏️ Edit")
    phone.wait_message(lambda m: "Send the corrected path" in text_of(m), 15, "the ask")
    phone.say(edited)

    closed = phone.wait(lambda snap: next(
        (m for m in phone.messages(snap) if m["message_id"] == request["message_id"]
         and not buttons(m) and "✏️ Edited by @owner" in text_of(m)), None),
        15, "the request's verdict")
    # what runs, after the line that says who edited it
    verdict = text_of(closed).split("✏️ Edited by @owner", 1)[1]
    assert edited in verdict and asked not in verdict, text_of(closed)
    tui.wait_shown("Wrote it.", 30)
    assert os.path.exists(edited) and not os.path.exists(asked)
    sess = daemon.wait_session(_task_done, 20, "the task done")
    assert edited in sess["card"] and asked not in sess["card"], sess["card"]
    assert "✏️ @owner" in sess["card"], sess["card"]
    # The chat shows the task's card when it was shown before the answer; a task whose
    # request came with its first look has none (its answer says what matters, ``notify``)
    phone.wait_message(lambda m: "Wrote it." in text_of(m), 15, "the answer")
    if any(text_of(m).startswith(("✅ e2e", "⏳ e2e")) for m in phone.messages()):
        done = phone.wait_message(lambda m: text_of(m).startswith("✅ e2e · done"), 15,
                                  "the card's last edit")
        assert edited in text_of(done) and asked not in text_of(done), text_of(done)


def test_an_edit_shows_its_real_diff_before_allow(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    """Claude Code asks to Edit a file: the request shows the unified diff against the file
    on disk (its own context lines included) as a diff block, before anything is allowed."""
    phone = Phone(fake_telegram)
    target = os.path.join(claude_home.project, "notes.txt")
    with open(target, "w", encoding="utf-8") as fh:
        fh.write("alpha\nbeta\ngamma\ndelta\n")
    fake_anthropic.script("E2E-TDIFF", fa.tool("Edit", {"file_path": target,
                                                       "old_string": "gamma",
                                                       "new_string": "GAMMA"}),
                          fa.text("Edited."))
    tui = dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TDIFF shout the third line")

    request = phone.wait_message(lambda m: "-gamma" in text_of(m) and "✅ Allow" in buttons(m),
                                 30, "the request with its diff")
    text = text_of(request)
    assert "+GAMMA" in text and " beta" in text and " delta" in text, text
    assert any(e.get("language") == "diff" for e in request.get("entities") or [])
    with open(target, encoding="utf-8") as fh:
        assert "gamma" in fh.read()  # nothing changed before the tap
    tui.wait_shown("Do you want to make this edit", 20)
    phone.tap(request, "✅ Allow")
    tui.wait_shown("Edited.", 30)
    with open(target, encoding="utf-8") as fh:
        assert fh.read() == "alpha\nbeta\nGAMMA\ndelta\n"


def test_accept_edits_for_the_session_from_the_phone_lets_the_next_edit_run_unasked(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    """Claude Code suggests "accept edits" for the session with a Write: offered as its own
    button, answered with exactly that ``updatedPermissions``, and the next edit asks nothing."""
    phone = Phone(fake_telegram)
    first = os.path.join(claude_home.project, "first.txt")
    second = os.path.join(claude_home.project, "second.txt")
    fake_anthropic.script("E2E-TSCOPE", fa.tool("Write", {"file_path": first, "content": "1\n"}),
                          fa.tool("Write", {"file_path": second, "content": "2\n"}),
                          fa.text("Both written."))
    dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TSCOPE write two files")

    request = phone.wait_message(lambda m: first in text_of(m) and "✅ Allow" in buttons(m), 30,
                                 "the request for the first write")
    # a Write of a new file: its diff (every line added) shown before anything is allowed
    assert "\n+1" in text_of(request), text_of(request)
    assert any(e.get("language") == "diff" for e in request.get("entities") or [])
    label = next((b for b in buttons(request) if b.startswith("✏️ Accept edits in its folders")), None)
    assert label, buttons(request)
    assert label.endswith("· this session")
    query = phone.tap(request, label)
    # what Claude Code grants with it, in its own words ("auto-approve file edits and common
    # file commands"), and for how long
    assert phone.toast(query)["text"] == ("Allowed. For this session only, file edits and "
                                          "common file commands in the session's folders no "
                                          "longer ask.")

    phone.wait(lambda snap: any("Both written." in t for t in phone.sent_texts(snap)), 40,
               "the answer")
    assert os.path.exists(first) and os.path.exists(second)
    asked = [m for m in phone.messages() if "✅ Allow" in buttons(m) or
             ("🔐" in text_of(m) and second in text_of(m))]
    assert not any(second in text_of(m) for m in asked), "the second edit asked again"
    (record,) = [r for r in claude_home.audit() if r["action"] == "permission_answer"]
    assert record["answer"] == "allow_always"
    assert record["scope"] == [{"type": "setMode", "mode": "acceptEdits",
                                "destination": "session"}]


def test_a_folder_allowed_for_the_session_grants_what_its_button_and_toast_say(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    """Claude Code suggests a folder for the session with a Bash command that writes there.
    Handed back, it makes the folder one of the session's working folders: a command that
    only reads there runs unasked, the next one that changes a file there asks again.  The
    button promised the whole folder; it and its toast now say just that."""
    phone = Phone(fake_telegram)
    folder = os.path.join(claude_home.root, "outside")
    os.makedirs(folder)
    with open(os.path.join(folder, "notes.txt"), "w", encoding="utf-8") as fh:
        fh.write("kept\n")
    fake_anthropic.script("E2E-TFOLDER", fa.bash(f"touch {folder}/first"),
                          fa.bash(f"cat {folder}/notes.txt"), fa.bash(f"touch {folder}/second"),
                          fa.text("Folder work done."))
    dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TFOLDER work in the folder")

    request = _request(phone, f"touch {folder}/first")
    label = next((b for b in buttons(request) if b.startswith("📁 Allow, and reads in /")), None)
    assert label and label.endswith(" · this session"), buttons(request)
    query = phone.tap(request, label)
    assert phone.toast(query)["text"] == (f"Allowed. For this session only, reads in {folder} "
                                          "no longer ask; a change there still asks.")
    _verdict(phone, request, f"{label} · chosen")
    # a change there asks again; the read before it did not ask
    again = _request(phone, f"touch {folder}/second")
    # (a request is a message with its buttons; the card lists the cat too)
    assert not [m for m in phone.messages() if f"cat {folder}" in text_of(m)
                and "✅ Allow" in buttons(m)]
    phone.tap(again, "✅ Allow")
    phone.wait(lambda snap: any("Folder work done." in t for t in phone.sent_texts(snap)), 40,
               "the answer")
    assert os.path.exists(f"{folder}/first") and os.path.exists(f"{folder}/second")
    results = [b for r in fake_anthropic.requests_with("E2E-TFOLDER") for b in r.tool_results()]
    assert any("kept" in json.dumps(b.get("content")) for b in results), results


def test_stop_tap_refuses_and_ends_the_task_with_no_further_model_call(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    """⏹ on a request: the hook's decision carries interrupt, so Claude Code ends the turn
    itself; before, Claude read the refusal and answered anyway."""
    phone = Phone(fake_telegram)
    target = os.path.join(claude_home.project, "stopped")
    fake_anthropic.script("E2E-TSTOP", fa.bash(f"touch {target}"), fa.text("Carried on anyway."))
    tui = dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TSTOP make the file")

    request = _request(phone, f"touch {target}")
    tui.wait_shown(DIALOG)
    query = phone.tap(request, "⏹ Stop")

    assert phone.toast(query)["text"] == "Denied and stopped"
    _verdict(phone, request, "⏹ Stopped")
    tui.wait_shown("Interrupted", 20)
    sess = daemon.wait_session(_task_done, 30, "the task ended")
    assert sess["card"].startswith("⏹ e2e · interrupted"), sess["card"]
    assert not os.path.exists(target)
    time.sleep(1.0)  # a model call after the refusal would come at once
    assert len(fake_anthropic.requests_with("E2E-TSTOP")) == 1
    assert not tui.shows("Carried on anyway.")
    (record,) = [r for r in claude_home.audit() if r["action"] == "permission_answer"]
    assert (record["answer"], record["via"]) == ("stop", "hook_decision")


def test_always_allow_saves_the_rule_and_the_next_identical_call_asks_nothing(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    command = "python3 -c 'print(6*7)'"
    fake_anthropic.script("E2E-TALWAYS", fa.bash(command), fa.text("First run done."))
    fake_anthropic.script("E2E-TAGAIN", fa.bash(command), fa.text("Second run done."))
    tui = dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TALWAYS run it")

    request = _request(phone, command)
    tui.wait_shown(DIALOG)
    # Claude Code offers a rule for this command: the button says what it remembers.
    assert "🟢 Always allow" in buttons(request), buttons(request)
    assert f"Always allow remembers: Bash({command})" in text_of(request)
    query = phone.tap(request, "🟢 Always allow")

    assert phone.toast(query)["text"] == "Always allowed"
    _verdict(phone, request, "🟢 Always allowed")
    tui.wait_shown("First run done.", 30)
    # 2.1.328 writes the rule (parentheses escaped) to the project's local settings.
    local = os.path.join(claude_home.project, ".claude", "settings.local.json")
    with open(local, encoding="utf-8") as fh:
        allowed = json.load(fh)["permissions"]["allow"]
    assert allowed == ["Bash(python3 -c 'print\\(6*7\\)')"], allowed
    daemon.wait_session(_task_done, 20, "the first task done")
    dialogs = tui.count(DIALOG)

    phone.say("E2E-TAGAIN run it again")

    tui.wait_shown("Second run done.", 30)
    sess = daemon.wait_session(lambda s: _task_done(s) and s["task"]["seq"] == 2, 20,
                               "the second task done")
    assert [r["status"] for r in sess["rows"] if r["task"] == 2] == ["ok"]
    results = [b for r in fake_anthropic.requests_with("E2E-TAGAIN") for b in r.tool_results()]
    assert results and "42" in json.dumps(results[-1].get("content")), results
    asked = [p for p in phone.calls("sendMessage") if "✅ Allow" in json.dumps(
        p.get("reply_markup"), ensure_ascii=False)]
    assert len(asked) == 1, asked
    assert tui.count(DIALOG) == dialogs  # Claude Code did not ask either


def test_late_taps_answer_the_terminal_dialog_with_keys(daemon, dtach_session, fake_anthropic,
                                                        fake_telegram, claude_home):
    """Nobody taps within the deadline: Claude Code shows its dialog; a tap then presses the
    dialog's keys — "2" for Always allow, "1" for Allow, Esc for Deny (2.1.328)."""
    phone = Phone(fake_telegram)
    claude_home.extra_env["AIPAGER_PERMISSION_REPLY_DEADLINE"] = SHORT_DEADLINE
    first, second = (os.path.join(claude_home.project, n) for n in ("late-one", "late-two"))
    always = "python3 -c 'print(6*7)'"
    fake_anthropic.script("E2E-TLATE", fa.bash(always), fa.bash(f"touch {first}"),
                          fa.bash(f"touch {second}"), fa.text("Never reached."))
    tui = dtach_session(*ASKING)
    _ready(daemon)
    # Where in the screen log the next dialog can start: before the prompt, then just before
    # each tap (the next tool call, and so its dialog, only comes after it).  Counting the
    # dialogs instead raced with a fast next step, whose dialog could be counted already.
    marks = [len(tui.screen())]
    phone.say("E2E-TLATE three steps")

    def late_tap(detail: str, label: str) -> dict:
        request = _request(phone, detail)
        # The hook gave up waiting (the daemon cleared the reply address), then Claude Code
        # drew its own dialog.
        daemon.wait_session(lambda s: any(r["detail"] == detail and r["reply_addr"] == ""
                                          for r in s["requests"]), 20, "the reply wait over")
        tui.wait_screen(lambda screen: drawn(DIALOG, screen[marks[-1]:]), 20, "the dialog")
        time.sleep(1.0)  # the TUI reads keys a moment after drawing a dialog
        marks.append(len(tui.screen()))
        query = phone.tap(request, label)
        phone.toast(query)
        return request

    # Always allow → "2": the rule Claude Code's own option 2 saves.
    request = late_tap(always, "🟢 Always allow")
    _verdict(phone, request, "🟢 Always allowed")
    local = os.path.join(claude_home.project, ".claude", "settings.local.json")
    phone.wait(lambda _s: os.path.exists(local), 15, "the local settings")
    with open(local, encoding="utf-8") as fh:
        assert json.load(fh)["permissions"]["allow"] == ["Bash(python3 *)"]

    # Allow → "1": the command runs.
    request = late_tap(f"touch {first}", "✅ Allow")
    _verdict(phone, request, "✅ Allowed")
    phone.wait(lambda _s: os.path.exists(first), 20, "the first file made")

    # Deny → Esc: not run, and Claude Code interrupts the turn.
    request = late_tap(f"touch {second}", "❌ Deny")
    _verdict(phone, request, "❌ Denied")
    tui.wait_shown("Interrupted", 20)
    sess = daemon.wait_session(_task_done, 20, "the task ended")
    assert sess["card"].startswith("⏹ e2e · interrupted"), sess["card"]
    assert not sess["requests"]
    assert not os.path.exists(second)
    assert not tui.shows("Never reached.")
    vias = [(r["answer"], r["via"]) for r in claude_home.audit()
            if r["action"] == "permission_answer"]
    assert vias == [("allow_always", "keystroke_fallback"), ("allow", "keystroke_fallback"),
                    ("deny", "keystroke_fallback")], vias


def test_a_tap_after_the_terminal_answered_types_nothing(daemon, dtach_session, fake_anthropic,
                                                         fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    claude_home.extra_env["AIPAGER_PERMISSION_REPLY_DEADLINE"] = SHORT_DEADLINE
    target = os.path.join(claude_home.project, "terminal-made")
    fake_anthropic.script("E2E-TTERM", fa.bash(f"touch {target}"), fa.text("Terminal said yes."))
    fake_anthropic.script("E2E-TNEXT", fa.text("Next one."))
    tui = dtach_session(*ASKING)
    _ready(daemon)
    phone.say("E2E-TTERM make the file")
    request = _request(phone, f"touch {target}")
    tui.wait_shown(DIALOG, 30)

    # Answered at the terminal: "1" (Yes).
    tui.press_until(b"1", lambda: os.path.exists(target))
    tui.wait_shown("Terminal said yes.", 30)
    daemon.wait_session(_task_done, 20, "the task done")
    phone.wait_message(lambda m: m["message_id"] == request["message_id"]
                       and "answered in the terminal" in text_of(m) and not buttons(m), 15,
                       "the request marked answered in the terminal")

    query = phone.tap(request, "✅ Allow")  # a stale button on the phone

    toast = phone.toast(query)
    assert toast["text"] in ("This request is no longer open.", "Already answered."), toast
    # Nothing was typed: the next message reaches Claude Code exactly as sent.
    phone.say("E2E-TNEXT go on")
    sess = daemon.wait_session(lambda s: _task_done(s) and s["task"]["seq"] == 2, 30,
                               "the next task done")
    assert sess["task"]["prompt"] == "E2E-TNEXT go on", sess["task"]
    assert not [r for r in claude_home.audit() if r["action"] == "permission_answer"]
