"""Files both ways on the real path: a photo from the phone reaches the real Claude Code as a
path it reads; a file Claude sends with its SendUserFile tool arrives in the chat once, after
the answer; a secret-shaped one is refused with a notice and nothing is uploaded."""

from __future__ import annotations

import base64
import hashlib
import os
import re

import pytest

from e2e.kit.chat import Phone
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

SESSION = "claude-e2e"
TUI_ARGS = ("--permission-mode", "default", "--allowedTools",
            "Bash,Write,Edit,Read,SendUserFile")
#: a real 1x1 PNG
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwAD"
                       "hgGAWjR9awAAAABJRU5ErkJggg==")


@pytest.fixture
def attachments(claude_home):
    """Sessions run as aipager starts them: with Claude Code's SendUserFile offered."""
    claude_home.extra_env["CLAUDE_CODE_ATTACHMENTS_BY_PATH"] = "1"


def _ready(daemon) -> None:
    daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                        "the session ready")


def _read_the_named_file(req: fa.Request) -> fa.Reply:
    found = re.search(r"(/\S+\.(?:jpg|png))", fa.message_text(req.last_user()))
    assert found, fa.message_text(req.last_user())
    return fa.tool("Read", {"file_path": found.group(1)})


def test_a_photo_from_the_phone_is_a_file_claude_reads(attachments, daemon, dtach_session,
                                                       fake_anthropic, fake_telegram):
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-PHOTO", _read_the_named_file, fa.text("I see a tiny image."))
    dtach_session(*TUI_ARGS)
    _ready(daemon)

    fake_telegram.send_photo(PNG, caption="E2E-PHOTO what is in")

    phone.wait(lambda snap: any("I see a tiny image." in t for t in phone.sent_texts(snap)), 60,
               "the answer")
    reqs = fake_anthropic.requests_with("E2E-PHOTO")
    prompt = fa.message_text(reqs[0].last_user())
    path = re.search(r"(/\S+\.jpg)", prompt).group(1)
    # the owner's words after the encoding's first line, the path as written (the owner may
    # read their own upload: it is not made inert)
    assert "(owner):\nE2E-PHOTO what is in /" in prompt
    with open(path, "rb") as fh:
        assert fh.read() == PNG
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    results = [b for r in reqs for b in r.tool_results()]
    assert results and not any(b.get("is_error") for b in results), results


def test_a_file_claude_sends_arrives_once_after_the_answer(attachments, daemon, dtach_session,
                                                           fake_anthropic, fake_telegram,
                                                           claude_home):
    phone = Phone(fake_telegram)
    report = os.path.join(claude_home.project, "report.md")
    content = "# Report\n\nAll checks passed.\n"
    fake_anthropic.script(
        "E2E-SEND",
        fa.tool("Write", {"file_path": report, "content": content}),
        fa.tool("SendUserFile", {"files": [report], "caption": "the report", "status": "normal"}),
        fa.text("Sent you the report."))
    dtach_session(*TUI_ARGS)
    _ready(daemon)

    phone.say("E2E-SEND make and send the report")

    upload = fake_telegram.wait_call("sendDocument", timeout=60)
    assert "SendUserFile" in fake_anthropic.requests_with("E2E-SEND")[0].tool_names
    snap = phone.snapshot()
    (stored,) = snap["uploads"]
    assert stored["sha256"] == hashlib.sha256(content.encode()).hexdigest()
    assert stored["filename"] == "report.md" and stored["caption"] == "the report"
    order = [(m, p) for m, p in snap["calls"] if m in ("sendMessage", "sendDocument")]
    answer_at = next(i for i, (m, p) in enumerate(order)
                     if m == "sendMessage" and "Sent you the report." in str(p.get("text")))
    assert answer_at < next(i for i, (m, _) in enumerate(order) if m == "sendDocument")
    assert upload


def test_a_secret_is_refused_with_a_notice_and_nothing_uploaded(attachments, daemon,
                                                                dtach_session, fake_anthropic,
                                                                fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    secret = os.path.join(claude_home.project, ".env")
    fake_anthropic.script(
        "E2E-SECRET",
        fa.tool("Write", {"file_path": secret, "content": "TOKEN=abc\n"}),
        fa.tool("SendUserFile", {"files": [secret], "status": "normal"}),
        fa.text("Could not send it."))
    dtach_session(*TUI_ARGS)
    _ready(daemon)

    phone.say("E2E-SECRET send the env file")

    phone.wait(lambda snap: any("Could not send it." in t for t in phone.sent_texts(snap)), 60,
               "the answer")
    notice = phone.wait(lambda snap: next((t for t in phone.sent_texts(snap)
                                           if "not sent" in t and ".env" in t), None),
                        20, "the refusal notice")
    assert "secret" in notice
    assert phone.snapshot()["uploads"] == []
    refused = [b for r in fake_anthropic.requests_with("E2E-SECRET") for b in r.tool_results()
               if b.get("is_error")]
    assert any("aipager will not send" in str(b.get("content")) for b in refused), refused
