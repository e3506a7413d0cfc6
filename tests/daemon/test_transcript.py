"""Claude's last answer from a transcript JSONL."""

from __future__ import annotations

import json

from aipager.daemon import transcript


def _write(path, entries):
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")


def test_last_assistant_text_skips_tool_only_and_sidechain(tmp_path):
    p = tmp_path / "t.jsonl"
    _write(p, [
        {"type": "user", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "First."}]}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Final "},
                                                      {"type": "text", "text": "answer."}]}},
        {"type": "assistant", "isSidechain": True, "message": {"content": [{"type": "text", "text": "sub"}]}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash", "input": {}}]}},
    ])
    assert transcript.last_answer(str(p)) == "Final \nanswer."


def test_missing_or_empty_transcript(tmp_path):
    assert transcript.last_answer(str(tmp_path / "nope.jsonl")) is None
    assert transcript.last_answer("") is None
    (tmp_path / "e.jsonl").write_text("garbage\n")
    assert transcript.last_answer(str(tmp_path / "e.jsonl")) is None


def test_only_the_tail_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(transcript, "TAIL_BYTES", 200)
    p = tmp_path / "t.jsonl"
    _write(p, [{"type": "user", "message": {"content": "x" * 500}},
               {"type": "assistant", "message": {"content": [{"type": "text", "text": "tail"}]}}])
    assert transcript.last_answer(str(p)) == "tail"


def test_task_notifications_found_in_user_entries(tmp_path):
    p = tmp_path / "t.jsonl"
    note = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"
    _write(p, [{"type": "user", "message": {"content": "hi"}},
               {"type": "user", "message": {"content": [{"type": "text", "text": note}]}},
               {"type": "assistant", "message": {"content": [{"type": "text", "text": "<task-notification> quoted"}]}}])
    assert transcript.task_notifications(str(p)) == [note]
    assert transcript.task_notifications(str(tmp_path / "none")) == []


def test_finished_answer_only_when_the_turn_ended(tmp_path):
    p = tmp_path / "t.jsonl"
    user = {"type": "user", "message": {"content": "go"}}
    tool = {"type": "assistant", "message": {"content": [{"type": "text", "text": "Running."},
                                                         {"type": "tool_use", "name": "Bash"}]}}
    done = {"type": "assistant", "message": {"content": [{"type": "text", "text": "Finished."}]}}
    _write(p, [user, tool])
    assert transcript.finished_answer(str(p)) is None
    _write(p, [user, tool, {"type": "user", "message": {"content": [{"type": "tool_result"}]}}])
    assert transcript.finished_answer(str(p)) is None
    _write(p, [user, tool, done, {"type": "system", "content": "x"}])
    assert transcript.finished_answer(str(p)) == "Finished."


def test_interrupted_at_only_when_the_last_turn_was_cut_short(tmp_path):
    p = tmp_path / "t.jsonl"
    user = {"type": "user", "message": {"content": "go"}}
    tool = {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash"}]}}
    # What Claude Code 2.1.328 writes when Esc stops a running tool (no hook fires).
    words = "[Request interrupted by user for tool use]"
    cut = {"type": "user", "timestamp": "2026-12-03T08:15:10.102Z",
           "message": {"role": "user", "content": [{"type": "text", "text": words}]}}
    tail = [{"type": "last-prompt", "lastPrompt": "go"}, {"type": "mode", "mode": "normal"}]
    _write(p, [user, tool, cut, *tail])
    assert transcript.interrupted_at(str(p)) == 1796285710.102
    # Interrupted while the model was still writing: the other wording.
    plain = dict(cut, message={"content": "[Request interrupted by user]"})
    _write(p, [user, plain])
    assert transcript.interrupted_at(str(p)) == 1796285710.102
    # A later turn (a new prompt, an answer) means the interruption is history.
    _write(p, [user, tool, cut, {"type": "user", "message": {"content": "next"}}])
    assert transcript.interrupted_at(str(p)) is None
    answer = {"type": "assistant", "message": {"content": [{"type": "text", "text": "ok"}]}}
    _write(p, [user, tool, cut, answer])
    assert transcript.interrupted_at(str(p)) is None
    # A sidechain (subagent) entry does not count; an unreadable time is not trusted.
    _write(p, [user, dict(cut, isSidechain=True)])
    assert transcript.interrupted_at(str(p)) is None
    _write(p, [user, dict(cut, timestamp="yesterday")])
    assert transcript.interrupted_at(str(p)) is None
    assert transcript.interrupted_at(str(tmp_path / "none")) is None
