"""Permission requests, questions and the Notification hook."""

from __future__ import annotations

from aipager.port.model import State

S = "claude-jim"
BASH = {"command": "touch /w/x", "description": "run cmd"}


def ev(name: str, **kw) -> dict:
    return {"hook_event_name": name, "session": S, "prompt_id": "p1", **kw}


def start(core) -> None:
    core.feed(ev("UserPromptSubmit", prompt="go"))


def perm(tid: str = "", inp=BASH, **kw) -> dict:
    return ev("PermissionRequest", tool_name="Bash", tool_input=inp, tool_use_id=tid, **kw)


def test_request_shows_description_and_real_command(core, notifier):
    start(core)
    core.feed(perm(permission_suggestions=[{"type": "addDirectories", "directories": ["/w"]}],
                   aipager_request_id="r1", aipager_reply_addr="/run/r1.sock"))
    (out,) = notifier.of("permission")
    assert out.text == "🔐 jim · Bash: run cmd\ntouch /w/x"
    # a folder Claude Code offers to remember is offered too, with where it would be kept
    assert out.data["buttons"] == ["allow", "deny", "stop", "edit", "s0"]
    assert out.data["scopes"] == ["📁 Allow, and reads in /w"]
    assert (out.data["request_id"], out.data["reply_addr"], out.data["separate"]) == ("r1", "/run/r1.sock", False)
    assert core.registry.get(S).state == State.WAITING


def test_allow_always_only_with_a_rule_suggestion(core, notifier):
    start(core)
    core.feed(perm(permission_suggestions=[{"type": "addRules", "rules": [{"toolName": "Bash"}]}]))
    assert notifier.of("permission")[0].data["buttons"][-1] == "always"


def test_second_request_is_separate_and_same_dialog_shown_once(core, notifier):
    start(core)
    core.feed(perm("t1"))
    core.feed(perm("t1"))  # same call again
    core.feed(perm("", aipager_request_id="r2"))  # same input, new hook waiting
    core.feed(perm("t2", {"command": "rm x", "description": "rm"}))
    outs = notifier.of("permission")
    assert [o.data["separate"] for o in outs] == [False, True]
    assert [o.data["request_id"] for o in notifier.of("request_update")] == ["r2"]


def test_post_tool_use_closes_the_request_and_resumes_work(core, notifier):
    start(core)
    core.feed(ev("PreToolUse", tool_name="Bash", tool_input=BASH, tool_use_id="t1"))
    core.feed(perm("t1"))
    core.feed(ev("PostToolUse", tool_name="Bash", tool_input=BASH, tool_use_id="t1"))
    assert len(notifier.of("request_closed")) == 1
    sess = core.registry.get(S)
    assert sess.requests == [] and sess.state == State.WORKING


def test_question_with_options_and_its_permission_request_not_shown_twice(core, notifier):
    start(core)
    q = {"questions": [{"question": "Which colour?", "header": "c", "multiSelect": False,
                        "options": [{"label": "Red", "description": ""}, {"label": "Blue", "description": ""}]}]}
    core.feed(ev("PreToolUse", tool_name="AskUserQuestion", tool_input=q, tool_use_id="q1"))
    core.feed(ev("PermissionRequest", tool_name="AskUserQuestion", tool_input=q))
    (out,) = notifier.of("question")
    assert out.text == "❓ jim · Which colour?" and out.data["options"] == ["Red", "Blue"]
    assert notifier.of("permission") == []
    assert core.registry.get(S).waiting_for() == "question"


def test_helper_agent_question_without_task_is_not_shown(core, notifier):
    q = {"questions": [{"question": "Pick", "options": ["a"]}]}
    core.feed(ev("PreToolUse", tool_name="AskUserQuestion", tool_input=q, tool_use_id="q1",
                 agent_id="h1", agent_type="helper"))
    assert notifier.of("question") == []
    start(core)
    core.feed(ev("PreToolUse", tool_name="AskUserQuestion", tool_input=q, tool_use_id="q2",
                 agent_id="h1", agent_type="helper"))
    assert len(notifier.of("question")) == 1


def test_permission_prompt_only_when_none_open(core, notifier):
    start(core)
    core.feed(perm("t1"))
    core.feed(ev("Notification", notification_type="permission_prompt", message="Claude needs your permission"))
    assert len(notifier.of("permission")) == 1
    core.feed(ev("PostToolUse", tool_name="Bash", tool_input=BASH, tool_use_id="t1"))
    core.feed(ev("Notification", notification_type="permission_prompt", message="Claude needs your permission"))
    assert notifier.of("permission")[-1].text == "🔐 jim · Permission: Claude needs your permission"


def test_idle_prompt_reminds_once_per_wait(core, notifier):
    start(core)
    core.feed(perm("t1"))
    idle = ev("Notification", notification_type="idle_prompt")
    core.feed(idle)
    core.feed(idle)
    assert notifier.notices("still_waiting") == ["⬆️ jim · still waiting for your answer above"]
    core.feed(ev("PostToolUse", tool_name="Bash", tool_input=BASH, tool_use_id="t1"))
    core.feed(perm("t2", {"command": "ls", "description": "list"}))
    core.feed(idle)
    assert len(notifier.notices("still_waiting")) == 2
    assert notifier.texts("answer") == []  # a waiting session is not finished


def test_reply_timeout_clears_the_reply_address(core, notifier):
    start(core)
    core.feed(perm("t1", aipager_request_id="r1", aipager_reply_addr="/run/r1.sock"))
    core.feed({"hook_event_name": "permission_reply_timeout", "session": S, "aipager_request_id": "r1"})
    assert core.registry.get(S).requests[0].reply_addr == ""
    assert notifier.of("request_update")[-1].data["reply_addr"] == ""


def test_stop_closes_open_requests(core, notifier):
    start(core)
    core.feed(perm("t1"))
    core.feed(ev("Stop", last_assistant_message="never mind"))
    assert core.registry.get(S).requests == [] and len(notifier.of("request_closed")) == 1


def test_agent_needs_input_is_a_waiting_request_unless_one_is_open(core, notifier):
    # Claude Code 2.1.328's auto mode asks with this notification type (seen in the TUI).
    start(core)
    core.feed(ev("Notification", notification_type="agent_needs_input"))
    sess = core.registry.get(S)
    assert (sess.state, sess.waiting_for()) == (State.WAITING, "permission")
    [shown] = notifier.of("permission")
    assert shown.text.startswith("🔐 jim · Permission: Claude needs your input\n⌨️ Its choices")
    assert shown.data["buttons"] == ["stop"]  # its own choices: only the terminal has them
    assert core.counters["unhandled"] == 0
    # A second signal for the same wait is not a second request.
    core.feed(ev("Notification", notification_type="agent_needs_input", message="again"))
    assert len(notifier.of("permission")) == 1 and len(sess.requests) == 1
    # The next tool result of the main loop shows it was answered at the terminal.
    core.feed(ev("PostToolUse", tool_name="Bash", tool_input=BASH, tool_use_id="t9"))
    assert sess.requests == [] and sess.state == State.WORKING


def test_agent_needs_input_after_a_permission_request_adds_nothing(core, notifier):
    start(core)
    core.feed(perm("t1"))
    core.feed(ev("Notification", notification_type="agent_needs_input", message="Claude needs your input"))
    assert len(notifier.of("permission")) == 1
    assert len(core.registry.get(S).requests) == 1


def test_each_suggestion_is_offered_with_its_destination_and_answered_alone(core, notifier):
    """Claude Code's own suggestions for an edit: this folder, and accept edits, both for the
    session; a tap takes exactly the one it names (``updatedPermissions``)."""
    from aipager.daemon import replies

    start(core)
    folder = {"type": "addDirectories", "directories": ["/home/dev/project"],
              "destination": "session"}
    mode = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    core.feed(ev("PermissionRequest", tool_name="Write", tool_use_id="t1",
                 tool_input={"file_path": "/home/dev/project/a.py", "content": "x"},
                 permission_suggestions=[folder, mode, {"type": "bogus"}],
                 aipager_request_id="r1", aipager_reply_addr="/run/r1.sock"))
    (out,) = notifier.of("permission")
    assert out.data["buttons"] == ["allow", "deny", "stop", "edit", "s0", "s1"]
    assert out.data["scopes"] == ["📁 Allow, and reads in /home/dev/project · this session",
                                  "✏️ Accept edits in its folders · this session"]
    sent = []
    result = replies.answer(core.ctx, S, out.data["key"], "allow_always", "@ana",
                            lambda addr, rid, decision: sent.append(decision) or True,
                            suggestion=1)
    assert result == replies.VIA_HOOK
    assert sent == [{"behavior": "allow", "updatedPermissions": [mode]}]


def test_a_lone_rule_is_the_one_always_allow_and_carries_its_destination():
    from aipager.texts import render

    rule = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
            "behavior": "allow", "destination": "localSettings"}
    assert render.suggestion_label(rule) == "🟢 Always Bash(npm test:*) · this project, for you"


def test_a_long_scoped_label_keeps_its_scope_and_shortens_the_path_in_its_middle():
    """Cut at 60 characters from the end, "· this project, for everyone" was lost: the button
    no longer said where the permission would be kept."""
    from aipager.texts import render

    folder = "/home/dev/work/clients/acme/backend/services/billing-reports"
    label = render.suggestion_label({"type": "addDirectories", "directories": [folder],
                                     "destination": "projectSettings"})
    assert label.endswith(" · this project, for everyone")
    what = label.removesuffix(" · this project, for everyone")
    head, cut, tail = what.partition("…")
    # what it grants is kept whole too: the path gives way, to no less than 12 characters
    assert cut and head.startswith("📁 Allow, and reads in /home/") and folder.endswith(tail)
    assert len(what) == len("📁 Allow, and reads in ") + 12
    # as Claude Code offers it (for the session), within the width of a phone's button
    label = render.suggestion_label({"type": "addDirectories", "directories": [folder],
                                     "destination": "session"})
    assert len(label) == render.SCOPE_LABEL_MAX and label.endswith("-reports · this session")


def test_stop_on_a_request_ends_the_task_even_with_a_message_held_for_the_dialog(core, notifier):
    """⏹ on a request denies it with ``interrupt``: the turn ends and no Stop follows.  With a
    message held for the dialog, released at once and typed, the transcript's last turn
    was never the interruption, and the card said "working" for ever."""
    from aipager.daemon import replies
    from aipager.port.model import QueuedMessage

    start(core)
    core.feed(perm("t1", aipager_request_id="r1", aipager_reply_addr="/run/r1.sock"))
    sess = core.registry.get(S)
    sess.queue.append(QueuedMessage(msg_id="7", text="and then this", queued_at=0,
                                    chat_id="1", status="held", held_for="dialog"))
    (out,) = notifier.of("permission")
    sent = []
    assert replies.answer(core.ctx, S, out.data["key"], "stop", "@ana",
                          lambda addr, rid, decision: sent.append(decision) or True) \
        == replies.VIA_HOOK
    assert sent[0]["behavior"] == "deny" and sent[0]["interrupt"] is True
    assert sess.state == State.READY and sess.task.ended_at is not None
    assert sess.task.error == "interrupted"
    assert [r.data["msg_id"] for r in notifier.of("release")] == ["7"]
    core.flush_cards()
    assert notifier.texts("card")[-1].startswith("⏹ jim · interrupted")


def test_auto_modes_own_dialog_shows_its_command_and_is_left_to_the_terminal(core, notifier):
    """In auto mode Claude Code's Bash dialog reached the phone as "Claude needs your
    permission" without the command, and Allow pressed "1" on a dialog listing "No" first:
    the command is shown, and the choices are said to be the terminal's (⏹ only)."""
    core.feed(ev("UserPromptSubmit", prompt="clean up", permission_mode="auto"))
    core.feed(ev("PreToolUse", tool_name="Bash", tool_use_id="t7",
                 tool_input={"command": "rm -rf build", "description": "clean"}))
    core.feed(ev("Notification", notification_type="permission_prompt",
                 message="Claude needs your permission to use Bash"))
    (out,) = notifier.of("permission")
    assert "rm -rf build" in out.text and "only in the terminal" in out.text
    assert out.data["buttons"] == ["stop"]
    # answered in the terminal: the call's result closes it
    core.feed(ev("PostToolUse", tool_name="Bash", tool_use_id="t7",
                 tool_input={"command": "rm -rf build", "description": "clean"}))
    assert core.registry.get(S).requests == []


def test_a_permission_prompt_outside_auto_mode_keeps_its_buttons(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="clean up", permission_mode="default"))
    core.feed(ev("Notification", notification_type="permission_prompt",
                 message="Claude needs your permission"))
    (out,) = notifier.of("permission")
    assert "allow" in out.data["buttons"]


def test_a_destructive_command_is_named_on_its_request_and_touch_is_not(core, notifier):
    """An ``rm -rf`` of the project got the same Allow as ``touch``, said the same way."""
    start(core)
    core.feed(perm("t1", inp={"command": "rm -rf /home/dev/project", "description": "clean"}))
    core.feed(perm("t2", inp={"command": "touch /home/dev/project/x", "description": "make"}))
    rm, touch = notifier.of("permission")
    assert "rm -rf /home/dev/project" in rm.text and "cannot be undone" in rm.text
    assert "(rm -r)" in rm.text and "cannot be undone" not in touch.text


def test_what_counts_as_destructive():
    from aipager.texts.danger import destructive

    assert destructive("cd /srv && rm -fr build") == "rm -r"
    assert destructive("sudo rm -r -f /") == "rm -r"
    assert destructive("git reset --hard HEAD~3") == "git reset --hard"
    assert destructive("git clean -fdx") == "git clean -f"
    assert destructive("git push origin main --force") == "git push --force"
    assert destructive("psql -c 'drop table users'") == "DROP/TRUNCATE"
    for harmless in ("rm notes.txt", "git push origin main", "npm run format", "echo rm -rf",
                     "grep -r rm src", "git reset --soft HEAD~1"):
        assert destructive(harmless) == "", harmless
