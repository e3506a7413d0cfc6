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
