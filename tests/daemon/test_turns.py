"""Which Stops deliver an answer: a turn under the same prompt that a Stop ends again with
other words (an agent team's lead answering a teammate's report, measured on the real Claude
Code 2.1.328 by tests/e2e/test_agent_team.py), Codex's turns named by ``turn_id``, and the
repeats that must stay silent."""

from __future__ import annotations

S = "claude-lead"


def _answers(notifier) -> list[str]:
    return [o.text.split("\n\n")[0] for o in notifier.of("answer", S)]


def test_the_leads_answer_to_a_teammates_report_reaches_the_phone(core, notifier) -> None:
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "build a team",
               "prompt_id": "p1"})
    core.feed({"hook_event_name": "Stop", "session": S, "prompt_id": "p1",
               "last_assistant_message": "Team launched."})
    # a teammate reports; the lead answers it in a turn of the same prompt
    core.feed({"hook_event_name": "Stop", "session": S, "prompt_id": "p1",
               "last_assistant_message": "Both workers are done: one file made."})
    assert _answers(notifier) == ["Team launched.", "Both workers are done: one file made."]
    # the same Stop again (a repeat, a replay) says nothing more
    core.feed({"hook_event_name": "Stop", "session": S, "prompt_id": "p1",
               "last_assistant_message": "Both workers are done: one file made.", "x": 1})
    assert len(_answers(notifier)) == 2


def test_an_answer_read_from_the_transcript_is_not_said_twice_by_its_stop(core, notifier,
                                                                          answers) -> None:
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "go",
               "prompt_id": "p1", "transcript_path": "/t/a.jsonl"})
    answers.by_path["/t/a.jsonl"] = "Done, as read from the transcript."
    core.feed({"hook_event_name": "Notification", "notification_type": "idle_prompt",
               "session": S, "transcript_path": "/t/a.jsonl"})
    # its Stop comes late, with the words slightly otherwise: the same turn, said once
    core.feed({"hook_event_name": "Stop", "session": S, "prompt_id": "p1",
               "last_assistant_message": "Done, as read from the transcript"})
    assert _answers(notifier) == ["Done, as read from the transcript."]


def test_codex_turns_are_told_apart_by_their_turn_id(core, notifier) -> None:
    for turn in ("t1", "t2"):
        core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "again",
                   "turn_id": turn})
        core.feed({"hook_event_name": "Stop", "session": S, "turn_id": turn,
                   "last_assistant_message": "Done."})
    assert _answers(notifier) == ["Done.", "Done."]
