"""A permission request for an edit shows the real diff it would make (a ``diff`` pre block;
its head and a .diff file when long), on the real chat with the real Daemon."""

from __future__ import annotations


async def test_the_request_shows_the_diff_and_a_long_one_comes_as_a_file(chat, tmp_path):
    f = tmp_path / "notes.md"
    f.write_text("".join(f"line {i}\n" for i in range(400)))
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="tidy", prompt_id="p1")
    chat.feed(session, "PermissionRequest", tool_name="Edit", tool_use_id="t1",
              tool_input={"file_path": str(f), "old_string": "line 7\n", "new_string": "LINE 7\n"})
    shown = await chat.fake.wait_for("sendMessage", lambda p: "-line 7" in str(p["text"]))
    assert "+LINE 7" in shown["text"] and "line 4\n" in shown["text"]  # real context lines
    assert [e for e in shown["entities"] if e.get("language") == "diff"]
    assert not chat.fake.calls_of("sendDocument")

    body = "".join(f"row {i}\n" for i in range(400))
    chat.feed(session, "PermissionRequest", tool_name="Write", tool_use_id="t2",
              tool_input={"file_path": str(tmp_path / "big.txt"), "content": body})
    doc = await chat.fake.wait_for("sendDocument", lambda p: True)
    assert str(doc.get("caption")) == "The whole diff"
    head = next(str(p["text"]) for p in chat.fake.calls_of("sendMessage") if "+row 0" in str(p["text"]))
    assert "more lines in the .diff file" in head and len(head) < 4096
