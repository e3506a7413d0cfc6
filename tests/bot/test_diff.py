"""/diff from the chat (the real chat over HTTP, the real daemon, real git): the changes of a
session's folder in a diff block, the whole as a .diff file when long, and in private
mode only the counts with the page's button."""

from __future__ import annotations

import subprocess

from bot.conftest import eventually

GIT = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]


def _project(tmp_path, lines: int = 1):
    proj = tmp_path / "proj"
    proj.mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=proj, check=True)
    (proj / "app.py").write_text("print('one')\n")
    subprocess.run([*GIT, "add", "."], cwd=proj, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "first"], cwd=proj, check=True)
    (proj / "app.py").write_text("".join(f"print('CANARY {i}')\n" for i in range(lines)))
    return proj


def _start(chat, proj) -> str:
    chat.sessions.live.add("claude-jim")
    chat.feed("claude-jim", "SessionStart", source="startup", session_id="sid-jim",
              cwd=str(proj), transcript_path="/nonexistent/jim.jsonl")
    return "claude-jim"


async def test_diff_shows_the_changes_in_a_diff_block(chat, tmp_path):
    _start(chat, _project(tmp_path))
    await chat.fake.user_says("/diff")  # the one session: no picker
    sent = await chat.fake.wait_for("sendMessage", lambda p: "📝 jim" in str(p["text"]))
    assert sent["text"].startswith("📝 jim: changed since the last commit (files: 1)\n")
    assert "-print('one')\n+print('CANARY 0')" in sent["text"]
    (pre,) = [e for e in sent["entities"] if e["type"] == "pre"]
    assert pre["language"] == "diff"
    assert chat.fake.calls_of("sendDocument") == []


async def test_a_long_diff_comes_whole_as_a_file(chat, tmp_path):
    _start(chat, _project(tmp_path, lines=400))
    await chat.fake.user_says("/diff jim")
    sent = await chat.fake.wait_for("sendMessage", lambda p: "📝 jim" in str(p["text"]))
    assert "more lines in the .diff file" in sent["text"] and len(sent["text"]) < 4096
    doc = await chat.fake.wait_for("sendDocument")
    assert doc["caption"] == "The whole diff"
    assert "print('CANARY 399')" in chat.fake.everything_received()


async def test_nothing_to_compare_is_said(chat, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    _start(chat, plain)
    await chat.fake.user_says("/diff jim")
    await chat.fake.wait_for("sendMessage", lambda p: str(p["text"]) == (
        "📝 jim's folder is not in a git repository: there is nothing to compare its files "
        "with."))


async def test_in_private_mode_the_chat_gets_the_counts_and_the_page_the_diff(chat, tmp_path):
    chat.bot.members.cfg.extra["private"] = True
    proj = _project(tmp_path)
    (proj / "CANARYNAME.txt").write_text("new\n")
    _start(chat, proj)
    await chat.fake.user_says("/diff jim")
    sent = await chat.fake.wait_for("sendMessage", lambda p: "📝 jim" in str(p["text"]))
    assert sent["text"].startswith("📝 jim: changed since the last commit (files: 2)")
    await eventually(lambda: chat.fake.calls_of("sendMessage"), what="sent")
    assert "CANARY" not in chat.fake.everything_received()
    assert "app.py" not in chat.fake.everything_received()
