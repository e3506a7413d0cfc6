"""Files both ways through the fake Bot API: downloads into owner-only folders under
hostile names, size limits, albums, caption routing; SendUserFile copies re-checked
and uploaded after the answer, secrets refused."""

from __future__ import annotations

import hashlib
import os
import stat
import time

import pytest
from bot.conftest import eventually
from fakes.telegram_api import OWNER

from aipager import files


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


async def test_a_photo_reaches_claude_as_a_private_file(chat):
    session = chat.start("jim")
    data = b"\x89PNG fake image bytes"
    await chat.fake.user_sends_photo(data)
    typed = await eventually(lambda: chat.sessions.typed, what="the prompt typed")
    sess_name, prompt, note = typed[0]
    assert sess_name == session and prompt.startswith("check this: /")
    path = prompt.split(": ", 1)[1]
    with open(path, "rb") as fh:
        assert fh.read() == data
    assert _mode(path) == 0o600 and _mode(os.path.dirname(path)) == 0o700
    assert not path.startswith("/tmp/aipager"), "never a shared /tmp name"
    assert note["text"] == chat.sessions.pasted[-1][1]  # the encoding, as typed


async def test_a_caption_routes_like_text(chat):
    chat.start("alpha")
    beta = chat.start("beta")
    await chat.fake.user_sends_document(b"log line\n", "build.log", caption="/beta why did it fail")
    typed = await eventually(lambda: chat.sessions.typed)
    assert typed[0][0] == beta
    assert typed[0][1].startswith("why did it fail /") and typed[0][1].endswith("build.log")


@pytest.mark.parametrize("hostile", ["../../etc/passwd", ".bashrc", "x" * 300 + ".txt",
                                     "a\x00b.txt", "\u202egnp.exe", "..", "/", "\\..\\win.ini"])
async def test_hostile_names_stay_in_the_folder(chat, hostile):
    chat.start("jim")
    await chat.fake.user_sends_document(b"payload", hostile)
    typed = await eventually(lambda: chat.sessions.typed)
    path = typed[0][1].split(": ", 1)[1]
    folder = files.inbox_dir(chat.bot.env, OWNER["id"])  # the sender's own folder
    assert os.path.dirname(path) == folder
    name = os.path.basename(path)
    assert not name.split("-", 1)[1].startswith(".")
    assert "\x00" not in name and "\u202e" not in name and "/" not in name
    assert len(name.encode()) <= files.NAME_MAX + 8
    with open(path, "rb") as fh:
        assert fh.read() == b"payload"


async def test_a_planted_symlink_is_refused_and_nothing_written_through_it(chat, tmp_path):
    chat.start("jim")
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir()
    folder = files.inbox_dir(chat.bot.env, OWNER["id"])
    os.makedirs(os.path.dirname(folder), mode=0o700, exist_ok=True)
    os.symlink(elsewhere, folder)
    await chat.fake.user_sends_document(b"secret", "notes.txt")
    said = await chat.fake.wait_for("sendMessage", lambda p: "was not saved" in p["text"])
    assert "notes.txt" in said["text"]
    assert list(elsewhere.iterdir()) == []
    assert chat.sessions.typed == []


async def test_a_file_over_the_download_limit_is_refused_before_downloading(chat):
    chat.start("jim")
    await chat.fake.user_sends_document(b"x" * (files.DOWNLOAD_MAX + 1), "huge.bin")
    said = await chat.fake.wait_for("sendMessage", lambda p: "huge.bin is" in p["text"])
    assert "20 MB" in said["text"]
    assert chat.fake.calls_of("getFile") == []
    assert chat.sessions.typed == []


async def test_an_album_of_ten_is_one_prompt(chat):
    chat.start("jim")
    for i in range(10):
        await chat.fake.user_sends_photo(f"image {i}".encode(), caption="compare these" if i == 0
                                         else None, media_group_id="album-1")
    typed = await eventually(lambda: chat.sessions.typed, timeout=10)
    await eventually(lambda: chat.bot.outbox.idle())
    assert len(chat.sessions.typed) == 1
    prompt = typed[0][1]
    assert prompt.startswith("compare these /")
    paths = prompt.split(" ")[2:]
    assert len(paths) == 10
    contents = sorted(open(p, "rb").read() for p in paths)
    assert contents == sorted(f"image {i}".encode() for i in range(10))


async def test_a_read_only_member_cannot_upload(chat, tmp_path):
    from fakes.telegram_api import OWNER

    from aipager import config

    cfg = chat.bot.members.current()
    config.save(chat.bot.env, cfg.with_member(config.Member(OWNER["id"], "read_only", "owner")))
    os.utime(os.path.join(os.path.dirname(config.paths.config_file(chat.bot.env)), "config.json"),
             (time.time() + 5, time.time() + 5))
    chat.start("jim")
    await chat.fake.user_sends_document(b"data", "a.txt")
    await chat.fake.wait_for("sendMessage", lambda p: "may not send" in p["text"])
    assert chat.sessions.typed == [] and chat.fake.calls_of("getFile") == []


def _send_file(chat, session, path, *, caption="the report", tool_use_id="f1"):
    tool_input = {"files": [str(path)], "caption": caption}
    chat.feed(session, "PreToolUse", tool_name="SendUserFile", tool_use_id=tool_use_id,
              tool_input=tool_input)
    chat.feed(session, "PostToolUse", tool_name="SendUserFile", tool_use_id=tool_use_id,
              tool_input=tool_input, tool_response={}, cwd=str(path.parent))


async def test_a_file_claude_sends_arrives_once_after_the_answer_as_it_was(chat, tmp_path):
    session = chat.start("jim")
    report = tmp_path / "report.md"
    report.write_bytes(b"# Report\nall good\n")
    chat.feed(session, "UserPromptSubmit", prompt="write a report", prompt_id="p1")
    _send_file(chat, session, report)
    await eventually(lambda: os.listdir(files.outbox_dir(chat.bot.env)) if os.path.isdir(
        files.outbox_dir(chat.bot.env)) else None, what="the private copy")
    report.write_bytes(b"swapped after the tool ran")  # too late: the copy was taken
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="Here is the report.")
    upload = await chat.fake.wait_for("sendDocument", timeout=10)
    stored = chat.fake.uploads
    assert len(stored) == 1
    assert stored[0]["sha256"] == hashlib.sha256(b"# Report\nall good\n").hexdigest()
    assert stored[0]["filename"] == "report.md" and stored[0]["caption"] == "the report"
    order = [m for m, _ in chat.fake.calls if m in ("sendMessage", "sendDocument")]
    answer_at = next(i for i, (m, p) in enumerate(
        [(m, p) for m, p in chat.fake.calls if m in ("sendMessage", "sendDocument")])
        if m == "sendMessage" and "Here is the report" in str(p.get("text")))
    assert order.index("sendDocument") > answer_at
    await eventually(lambda: not os.listdir(files.outbox_dir(chat.bot.env)))
    assert upload


async def test_an_image_goes_as_a_photo(chat, tmp_path):
    session = chat.start("jim")
    chart = tmp_path / "chart.png"
    chart.write_bytes(b"\x89PNG chart")
    _send_file(chat, session, chart, caption="")
    chat.feed(session, "Stop", last_assistant_message="Chart attached.")
    await chat.fake.wait_for("sendPhoto", timeout=10)


async def test_secrets_are_refused_with_a_notice_and_nothing_uploaded(chat, tmp_path):
    session = chat.start("jim")
    secret = tmp_path / ".env"
    secret.write_text("TOKEN=abc\n")
    _send_file(chat, session, secret)
    chat.feed(session, "Stop", last_assistant_message="Sent.")
    notice = await chat.fake.wait_for("sendMessage", lambda p: "not sent" in p["text"], timeout=10)
    assert ".env" in notice["text"] and "secret" in notice["text"]
    assert chat.fake.uploads == []


def test_sweep_removes_day_old_files(tmp_path):
    env = dict(os.environ)
    path = files.save_download(env, 42, "old.txt", b"x")
    fresh = files.save_download(env, 42, "new.txt", b"y")
    old = time.time() - files.MAX_AGE - 60
    os.utime(path, (old, old))
    assert files.sweep(env) == 1
    assert not os.path.exists(path) and os.path.exists(fresh)


def test_safe_name_rules():
    assert files.safe_name("../../etc/passwd") == "_.._etc_passwd"
    assert files.safe_name(".bashrc") == "bashrc"
    assert files.safe_name("") == "file"
    assert files.safe_name("\u202etxt.exe") == "txt.exe"
    long = files.safe_name("é" * 300 + ".txt")
    assert long.endswith(".txt") and len(long.encode()) <= files.NAME_MAX


@pytest.mark.parametrize("old_root_mode", [None, 0o755])
def test_every_folder_made_for_a_download_is_owner_only_and_the_doctor_agrees(tmp_path,
                                                                               old_root_mode):
    from aipager.proto import paths
    from aipager.cli.doctor_cmd import _private_files

    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}  # no runtime folder: ~/.cache/aipager/files, as on a laptop
    root = paths.files_dir(env)
    assert root == str(home / ".cache" / "aipager" / "files")
    old = os.umask(0o022)
    try:
        if old_root_mode is not None:  # made by an older aipager
            os.makedirs(root)
            os.chmod(root, old_root_mode)
        path = files.save_download(env, 42, "notes.txt", b"hello")
    finally:
        os.umask(old)
    made = []
    folder = os.path.dirname(path)
    while folder != str(home):
        made.append(folder)
        folder = os.path.dirname(folder)
    assert len(made) == 5  # chat-42, in, files, aipager, .cache
    if old_root_mode is not None:
        made = made[:3]  # the older aipager made the two above the files folder
    assert {f: oct(_mode(f)) for f in made} == {f: oct(0o700) for f in made}
    check = _private_files(env)
    assert check.ok, check
