"""A chat message is a prompt: what is refused, what is cleaned, what an @-mention may name."""

from __future__ import annotations

import os

import pytest

from aipager.policy import chatprompt, model
from aipager.policy.chatprompt import Refused


@pytest.mark.parametrize("text, why", [
    ("!touch /tmp/x", Refused.SHELL),
    ("  !touch /tmp/x", Refused.SHELL),
    ("\n\t!rm -rf ~", Refused.SHELL),
    ("\u3000!id", Refused.SHELL),          # ideographic space
    ("\u200b!id", Refused.SHELL),          # zero-width space: invisible, so it hides nothing
    ("\u202e!id", Refused.SHELL),          # a bidi override
    ("\u0301!id", Refused.SHELL),          # a combining mark with nothing to sit on
    ("\uff01id", Refused.SHELL),           # fullwidth !
    ("/exit", Refused.COMMAND),
    (" /exit", Refused.COMMAND),           # Claude Code trims it and runs /exit
    ("\x03\x03/clear", Refused.COMMAND),   # control bytes go, the command stays refused
    ("\uff0fexit", Refused.COMMAND),
    ("/etc/hosts is wrong", Refused.COMMAND),
    ("# always use tabs", Refused.MEMORY),
    ("& sleep 100", Refused.BACKGROUND),
])
def test_a_leading_mode_character_is_refused_however_it_is_hidden(text, why):
    assert chatprompt.refusal(text).reason is why


@pytest.mark.parametrize("text", [
    "run !ls for me", "look at /etc/hosts", "issue #12 again", "this & that",
    "hello", "", "   ", "ça va? 你好",
])
def test_ordinary_text_passes(text):
    verdict = chatprompt.refusal(text)
    assert verdict.reason is None
    assert verdict.text == text


def test_control_bytes_and_escapes_are_removed_line_breaks_kept():
    text = "a\x1b[201~b\x03c\r\nd\re\tf\x7fg\x9bh"
    cleaned = chatprompt.clean(text)
    assert cleaned == "a[201~bc\nd\ne\tfgh"
    assert "\x1b" not in cleaned
    assert chatprompt.refusal(text).text == cleaned


def test_mentions_are_read_as_claude_code_reads_them():
    assert chatprompt.mentions('see @src/a.py, @"my notes.txt" and @b.py#L3-9') == [
        "src/a.py", "my notes.txt", "b.py"]
    assert chatprompt.mentions("mail me at ana@example.org") == []


@pytest.fixture
def user_snapshot(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text("print(1)")
    env = {"HOME": str(home), "AIPAGER_INSTANCE_DIR": str(tmp_path / "inst"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    snap = model.task_snapshot(model.load_policy(env), "user", env)
    return snap, str(project), str(home)


def test_a_mention_of_a_file_the_role_may_not_read_is_refused(user_snapshot):
    snap, project, home = user_snapshot
    check = chatprompt.read_check(snap, project, home)
    verdict = chatprompt.refusal("what is in @~/.ssh/id_rsa please", mention_check=check)
    assert verdict.reason is Refused.MENTION
    assert "id_rsa" in verdict.detail


def test_a_mention_inside_the_project_or_of_nothing_passes(user_snapshot):
    snap, project, home = user_snapshot
    check = chatprompt.read_check(snap, project, home)
    assert chatprompt.refusal("look at @a.py", mention_check=check).reason is None
    assert chatprompt.refusal("ping @nobody-here", mention_check=check).reason is None


def test_a_mention_through_a_symlink_is_decided_on_the_real_file(user_snapshot):
    snap, project, home = user_snapshot
    os.symlink(os.path.join(home, ".ssh", "id_rsa"), os.path.join(project, "innocent.txt"))
    check = chatprompt.read_check(snap, project, home)
    assert chatprompt.refusal("see @innocent.txt", mention_check=check).reason is Refused.MENTION


def test_a_relative_mention_without_a_known_folder_fails_closed(user_snapshot):
    snap, _, home = user_snapshot
    check = chatprompt.read_check(snap, "", home)
    assert chatprompt.refusal("see @a.py", mention_check=check).reason is Refused.MENTION


def test_a_mention_of_the_systems_secrets_is_refused(user_snapshot):
    """floor.SECRET_GLOBS: Claude Code would paste the file into the prompt without a tool call."""
    snap, project, home = user_snapshot
    check = chatprompt.read_check(snap, project, home)
    for text in ("see @/etc/shadow", 'and @"/proc/self/environ"'):
        assert chatprompt.refusal(text, mention_check=check).reason is Refused.MENTION, text
    assert chatprompt.refusal("see @/etc/hostname", mention_check=check).reason is None
