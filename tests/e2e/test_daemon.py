"""The real daemon (``aipager start``) following real Claude Code sessions.

Each scenario asserts on what ``aipager status --json`` reports (the daemon's saved state)
and on what the daemon's log notifier wrote (the stand-in for the chat until the Telegram
layer lands).
"""

from __future__ import annotations

import os
import re
import time

import pytest

from fakes import anthropic as fa

# Runs by default (scripts/test.sh); `-m 'not e2e'` leaves it out of a quick loop.
pytestmark = pytest.mark.e2e

SESSION = "claude-e2e"
#: the TUI asks before tools in its default "auto" mode when the model is not Anthropic's
#: server (its safety check cannot run); the default mode plus allowed tools does not ask.
TUI_ARGS = ("--permission-mode", "default", "--allowedTools", "Bash,Write,Edit,Read,Agent")


def _answers(daemon, text: str) -> set[str]:
    """Distinct log lines announcing ``text`` as an answer for the session."""
    return {
        line for line in daemon.log().splitlines()
        if f"answer {SESSION}: {text}" in line
    }


def _task_done(sess: dict) -> bool:
    return bool(sess.get("task") and sess["task"].get("ended_at")) and sess["state"] == "ready"


def _card_rows(sess: dict) -> list[str]:
    """The card's row lines (tools ✓ ✗ ⏳, agents 🤖, shells ⚙️), without the elapsed times."""
    rows = []
    for line in sess["card"].splitlines()[1:]:
        if line.startswith(("✓ ", "✗ ", "⏳ ", "🤖 ", "✅ 🤖 ", "⚙️ ")):
            rows.append(re.sub(r" · \d+[smh]( \d+[sm])?$", "", line))
    return rows


def _notices(sess: dict, name: str) -> list[str]:
    return [n["text"] for n in sess["notices"] if n["name"] == name]


def test_typed_prompt_tool_rows_subagent_answer_and_session_end(daemon, dtach_session,
                                                                fake_anthropic):
    fake_anthropic.script(
        "E2E-DAEMON",
        fa.bash("echo first-row"),
        fa.bash("false"),
        fa.agent("E2E-DSUB look around", "look around"),
        fa.text("The daemon saw all of it."),
    )
    fake_anthropic.script("E2E-DSUB", fa.bash("sleep 2; echo from-sub"), fa.text("Sub done."))
    tui = dtach_session(*TUI_ARGS)

    tui.type("E2E-DAEMON run the steps")

    # While the subagent works, the card shows its row (its latest tool as its activity)
    # under the main loop's tool rows.
    running = daemon.wait_session(
        lambda s: "🤖 general-purpose · Bash: sleep 2; echo from-sub" in _card_rows(s), 30,
        "a running subagent row")
    assert _card_rows(running)[:2] == ["✓ Bash: echo first-row", "✗ Bash: false — Exit code 1"]
    sess = daemon.wait_session(
        lambda s: _task_done(s) and any(a["status"] == "done" for a in s["subagents"]),
        30, "the task finished with its subagent done")
    task = sess["task"]
    assert task["prompt"] == "E2E-DAEMON run the steps"
    assert task["origin"] == "terminal"
    rows = [(r["tool"], r["summary"], r["status"], r["agent"]) for r in sess["rows"]]
    (agent,) = sess["subagents"]
    assert rows == [
        ("Bash", "Bash: echo first-row", "ok", None),
        ("Bash", "Bash: false", "failed", None),
        ("Bash", "Bash: sleep 2; echo from-sub", "ok", agent["id"]),
    ]
    assert sess["rows"][1]["error"] == "Exit code 1"
    assert agent["description"] == "look around" and agent["tool_count"] == 1
    # The card: the main loop's rows in order, the subagent's row finished (its own tool
    # call counts on that row, not as a main-loop row).
    assert sess["card"].startswith("✅ e2e · done · "), sess["card"]
    assert _card_rows(sess) == ["✓ Bash: echo first-row", "✗ Bash: false — Exit code 1",
                                f"✅ 🤖 {agent['type']} · 1 tool used"]
    assert sess["running_subagents"] == 0
    # The answer was delivered exactly once, and recorded so a restart never resends it.
    assert len(_answers(daemon, "The daemon saw all of it.")) == 1
    assert sess["delivered_answers"].count(f"p:{task['prompt_id']}") == 1

    tui.type("/exit")

    gone = daemon.wait_session(lambda s: s["state"] == "gone", 20, "the session gone")
    assert gone["end_reason"] and gone["gone_at"]


def test_background_command_tracked_to_its_end(daemon, run_claude_p, fake_anthropic):
    fake_anthropic.script_background_job("E2E-DBG", "sleep 1; echo bg-finished")

    run = run_claude_p("E2E-DBG start it")

    assert run.returncode == 0, run.describe()
    sess = daemon.wait_session(
        lambda s: s["background_commands"] and s["running_background_commands"] == 0,
        20, "the background command finished")
    (bg,) = sess["background_commands"]
    assert "sleep 1; echo bg-finished" in bg["command"]
    assert bg["status"] != "running" and bg["ended_at"]


def test_context_warning_from_the_status_line(daemon, dtach_session, fake_anthropic):
    # A turn that reports a nearly full context: the status line shows it, the daemon warns.
    fake_anthropic.script("E2E-CTX", fa.text("Big context.", input_tokens=900_000))
    tui = dtach_session(*TUI_ARGS)

    tui.type("E2E-CTX fill it up")

    sess = daemon.wait_session(lambda s: s["context_warned"], 30, "the context warning")
    assert sess["context_pct"] >= 80
    (warning,) = _notices(sess, "context_warning")
    assert re.fullmatch(r"⚠️ e2e · Context at (8\d|9\d|100)% - will compact soon", warning), warning
    warnings = {line for line in daemon.log().splitlines() if f"notice {SESSION}" in line
                and "context" in line.lower()}
    assert len(warnings) == 1, daemon.log()[-2000:]


def test_daemon_restarted_mid_task_loses_nothing(daemon, dtach_session, fake_anthropic):
    fake_anthropic.script(
        "E2E-RESTART",
        fa.bash("sleep 3; echo slow-step"),
        fa.bash("echo after-restart"),
        fa.text("Survived the restart."),
    )
    tui = dtach_session(*TUI_ARGS)
    tui.type("E2E-RESTART go")
    daemon.wait_session(lambda s: any(r["status"] == "running" for r in s["rows"]), 20,
                        "the slow step running")

    daemon.stop()
    # While the daemon is down the slow step ends, the next one runs, the task finishes.
    deadline = time.monotonic() + 20
    while not tui.shows("Survived the restart.") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert tui.shows("Survived the restart."), "the task did not finish while the daemon was down"
    daemon.start()

    # The hooks spooled what fired while it was down (the end of the slow step, the next
    # tool, the Stop); the restarted daemon replays it: nothing is lost, nothing repeated.
    sess = daemon.wait_session(_task_done, 30, "the task finished after the restart")
    assert sess["state"] != "gone"
    assert sess["task"]["prompt"] == "E2E-RESTART go"
    assert [(r["summary"], r["status"]) for r in sess["rows"]] == [
        ("Bash: sleep 3; echo slow-step", "ok"), ("Bash: echo after-restart", "ok")]
    assert _card_rows(sess) == ["✓ Bash: sleep 3; echo slow-step", "✓ Bash: echo after-restart"]
    assert sess["card"].startswith("✅ e2e · done · "), sess["card"]
    counters = daemon.status()["state"]["daemon"]["counters"]
    assert counters["spool_replayed"] >= 3 and counters["spool_stale"] == 0, counters
    assert len(_answers(daemon, "Survived the restart.")) == 1


def test_session_made_by_the_cli_is_followed_until_killed(daemon, dtach_session, fake_anthropic):
    fake_anthropic.script("E2E-CLI", fa.text("Answered inside the CLI's session."))
    tui = dtach_session(*TUI_ARGS, cli=True)
    assert "Started session e2e" in tui.cli_output
    status = daemon.wait_state(
        lambda st: any(t["session"] == SESSION and t["live"] for t in st["dtach_sessions"]),
        10, "the dtach session listed", cli=True)
    daemon.wait_session(lambda s: s["claude_session_id"], 20, "SessionStart seen")

    tui.type("E2E-CLI hello")

    sess = daemon.wait_session(_task_done, 30, "the task finished")
    assert sess["task"]["prompt"] == "E2E-CLI hello"
    assert len(_answers(daemon, "Answered inside the CLI's session.")) == 1
    assert tui.kill().returncode == 0

    gone = daemon.wait_session(lambda s: s["state"] == "gone", 20, "the session gone")
    assert gone["gone_at"]
    assert status["daemon"]["running"]


def test_permission_request_waits_then_is_answered_at_the_terminal(daemon, dtach_session,
                                                                   fake_anthropic, claude_home):
    target = os.path.join(claude_home.project, "approved-file")
    fake_anthropic.script("E2E-PERM", fa.bash(f"touch {target}"), fa.text("Made it after approval."))
    # nobody taps: the hook's reply wait ends soon, then Claude Code draws its dialog
    claude_home.extra_env["AIPAGER_PERMISSION_REPLY_DEADLINE"] = "1"
    tui = dtach_session("--permission-mode", "default")  # nothing pre-allowed: Claude asks

    tui.type("E2E-PERM make the file")

    sess = daemon.wait_session(lambda s: s["waiting_for"] == "permission", 30,
                               "a permission request")
    assert sess["state"] == "waiting"
    assert len(sess["requests"][0]["request_id"]) == 32
    tui.wait_shown("Do you want to proceed?")
    # the hook's permission_reply_timeout cleared the reply address: a tap now means keys
    daemon.wait_session(lambda s: s["requests"] and s["requests"][0]["reply_addr"] == "", 10,
                        "the reply address cleared")
    assert not os.path.exists(target)

    # "Yes", at the terminal; the daemon sees the request close when the tool has run.
    tui.press_until(b"1", lambda: (daemon.session() or {}).get("waiting_for") is None)

    sess = daemon.wait_session(_task_done, 30, "the task finished after the approval")
    assert sess["waiting_for"] is None and not sess["requests"]
    assert [(r["summary"], r["status"]) for r in sess["rows"]] == [(f"Bash: touch {target}", "ok")]
    assert os.path.exists(target)
    assert len(_answers(daemon, "Made it after approval.")) == 1


def test_compaction_is_announced_with_the_context_drop(daemon, dtach_session, fake_anthropic):
    fake_anthropic.script("E2E-COMPACT", fa.text("A long conversation.", input_tokens=600_000))
    tui = dtach_session(*TUI_ARGS)
    tui.type("E2E-COMPACT talk a lot")
    daemon.wait_session(lambda s: _task_done(s) and s["context_pct"] >= 50, 30,
                        "the task done at 60% context")

    fake_anthropic.script("E2E-AFTER", fa.text("Fresh and small."))

    tui.type("/compact")

    daemon.wait_session(lambda s: s["compact_notice_pending"], 30, "the compaction done")
    # The drop is announced once a status reading shows it: the next turn's.
    tui.type("E2E-AFTER carry on")

    def compacted(s: dict) -> bool:
        return not s["compacting"] and not s["compact_notice_pending"] and s["context_pct"] < 10

    sess = daemon.wait_session(compacted, 30, "the compaction settled")
    notices = {line.split(": ", 1)[-1] for line in daemon.log().splitlines()
               if f"notice {SESSION}: " in line}
    assert any("Compacting the conversation" in n for n in notices), notices
    assert any("Conversation compacted: 60% → 0%" in n for n in notices), notices
    # The same notices, once each, in the daemon's state.
    assert _notices(sess, "compacting") == ["🔄 e2e · Compacting the conversation"]
    assert _notices(sess, "compacted") == ["📦 e2e · Conversation compacted: 60% → 0%"]
    assert "Compacting the conversation" not in sess["card"]


def test_question_waits_then_is_answered_at_the_terminal(daemon, dtach_session, fake_anthropic):
    question = {"questions": [{
        "question": "Which colour should the button be?", "header": "Colour", "multiSelect": False,
        "options": [{"label": "Green", "description": "calm"},
                    {"label": "Red", "description": "loud"}],
    }]}
    fake_anthropic.script("E2E-ASK", fa.tool("AskUserQuestion", question),
                          fa.text("Going with your choice."))
    tui = dtach_session(*TUI_ARGS)

    tui.type("E2E-ASK pick a colour")

    sess = daemon.wait_session(lambda s: s["waiting_for"] == "question", 30, "the question")
    assert sess["state"] == "waiting"
    tui.wait_shown("Which colour should the button be?")

    # The first option (Green) is preselected.
    tui.press_until(b"\r", lambda: (daemon.session() or {}).get("waiting_for") is None)

    sess = daemon.wait_session(_task_done, 30, "the task finished after the answer")
    assert sess["waiting_for"] is None
    answered = [b for r in fake_anthropic.requests_with("E2E-ASK") for b in r.tool_results()]
    assert answered and "Green" in str(answered[-1].get("content")), answered
    assert len(_answers(daemon, "Going with your choice.")) == 1
