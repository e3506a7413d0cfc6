"""A plan to approve (ExitPlanMode) is shown formatted, as Claude wrote it, with Approve plan /
Keep planning."""

from __future__ import annotations

PLAN = "# Paint the button\n\n1. Pick **blue**\n2. Run `make test`\n\n- keep the old colour"


async def test_the_plan_is_formatted_with_its_two_answers(chat):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="plan it", prompt_id="p1")
    chat.feed(session, "PermissionRequest", tool_name="ExitPlanMode", tool_use_id="t1",
              tool_input={"plan": PLAN}, aipager_request_id="rid-p",
              aipager_reply_addr="/nonexistent/reply.sock")
    shown = await chat.fake.wait_for("sendMessage", lambda p: "Approve plan?" in str(p["text"]))
    text = str(shown["text"])
    assert "**" not in text and "# Paint" not in text  # no raw Markdown
    assert "Paint the button" in text and "blue" in text
    kinds = {e["type"] for e in shown["entities"]}
    assert {"bold", "code"} <= kinds and "pre" not in kinds
    bold = next(e for e in shown["entities"] if e["type"] == "bold" and
                text.encode("utf-16-le")[2 * e["offset"]:2 * (e["offset"] + e["length"])]
                .decode("utf-16-le") == "blue")
    assert bold
    labels = [b["text"] for row in shown["reply_markup"]["inline_keyboard"] for b in row]
    assert labels[:2] == ["✅ Approve plan", "✍️ Keep planning"]
