"""A person's message is encoded: Claude Code's input line can read it only as their words.

The properties hold for any text (hypothesis): the first line is fixed, nothing is a key,
no ``@`` but a decided one survives, and the words come back for display.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import example, given, settings, strategies as st

from aipager.policy import chatprompt, hookside, model
from aipager.policy.chatprompt import INERT_AT, PREFIX


def enc(text: str, mention_ok=None, label: str = "ana", role: str = "user") -> chatprompt.Encoded:
    return chatprompt.encode(text, label=label, role=role, mention_ok=mention_ok)


@pytest.mark.parametrize("text", [
    "!touch /tmp/x", "  !id", "\u3164!id", "\u115f/exit", "\uffa0!id", "\u200b!id",
    "/exit", " /exit ", "exit", "quit", ":q", "\x03\x03/clear", "# always use tabs",
    "& sleep 100", "/etc/hosts", "~/.ssh/id_rsa", "@~/.ssh/id_rsa",
])
def test_no_first_character_or_whole_line_command_can_form(text):
    out = enc(text).text
    assert out.startswith(PREFIX + "ana (user):\n")
    assert out.splitlines()[0] == "Via aipager, from ana (user):"
    assert chatprompt.is_encoded(out)


@pytest.mark.parametrize("text", [
    "what is in @~/.ssh/id_rsa", 'see @"/etc/shadow"', "@/etc/shadow.", "x\u3001@/etc/shadow",
    "(@/etc/shadow)", "@/etc/shadow#foo", "@/etc/shadow#L1-2", "mail ana@example.org",
    "\uff08@~/.config/aipager/config.json", "@@/etc/passwd", "a\n@/proc/self/environ",
])
def test_every_at_is_inert_without_a_decision(text):
    out = enc(text).text
    assert "@" not in out
    assert out.count(INERT_AT) == text.count("@")


def test_a_decided_mention_is_written_in_its_canonical_form(tmp_path):
    (tmp_path / "a.py").write_text("x")
    decided = []

    def ok(path):
        decided.append(path)
        return str(tmp_path / path) if path == "a.py" else None

    out = enc("look at @a.py and @b.py, or @c.py", ok)
    assert decided == ["a.py", "c.py"]  # "@b.py," is no plain mention: never decided
    body = out.text.split("\n", 1)[1]
    assert body == f"look at @{tmp_path}/a.py and {INERT_AT}b.py, or {INERT_AT}c.py"
    assert out.attached == (f"{tmp_path}/a.py",)


@pytest.mark.parametrize("full", [
    "/etc/shadow.", "/a b/c", "/x#y", "/x/", "relative/x", "/a/../etc/shadow", '/"q"'])
def test_a_decision_in_an_unusual_form_is_never_written_as_a_mention(full):
    out = enc("see @x", lambda path: full)
    assert "@" not in out.text and out.attached == ()


def test_control_bytes_and_escapes_are_removed_line_breaks_kept():
    text = "a\x1b[201~b\x03c\r\nd\re\tf\x7fg\x9bh"
    out = enc(text)
    assert out.words == "a[201~bc\nd\ne\tfgh"
    assert "\x1b" not in out.text and "\r" not in out.text


def test_the_first_line_names_the_sender_and_nothing_else():
    out = enc("hi", label="@evil\nexit\x1b @x", role="ad\nmin")
    head = out.text.split("\n", 1)[0]
    assert head == "Via aipager, from evil exit x (admin):"
    assert enc("hi", label="").text.startswith(PREFIX + "someone (user):")


def test_an_empty_message_is_refused():
    for text in ("", "   ", "\x03\x1b", "\n\n"):
        with pytest.raises(ValueError):
            enc(text)


def test_words_gives_back_what_the_person_wrote():
    out = enc("mail ana@example.org about @x")
    assert chatprompt.words(out.text) == "mail ana@example.org about @x"
    assert chatprompt.sender_of(out.text) == "ana"
    assert chatprompt.words("typed at the computer") == "typed at the computer"
    wrapped = f'<pasted_content id="1">\n{out.text}\n</pasted_content id="1">'
    assert chatprompt.words(wrapped) == "mail ana@example.org about @x"


def test_the_hook_knows_the_first_line():
    """hookside (and the compiled hook, through setup.py's literal) blocks a prompt that
    claims to be a message and is none: the two must spell it alike."""
    assert hookside.ENCODED_PREFIX == chatprompt.PREFIX


@settings(max_examples=400, deadline=None)
@given(text=st.text(min_size=1, max_size=200), label=st.text(max_size=50),
       allow=st.booleans())
# a name that is only a Hangul filler (a letter Claude Code strips) once made an encoding
# the terminal refused to type
@example(text="0", label="\u115f", allow=False)
def test_any_text_is_encoded_safely(text, label, allow):
    try:
        out = chatprompt.encode(text, label=label, role="user",
                                mention_ok=(lambda p: "/srv/x/" + p.strip("./~+-") + "z") if allow else None)
    except ValueError:
        assert not chatprompt.clean(text).strip()
        return
    assert chatprompt.is_encoded(out.text)
    first, body = out.text.split("\n", 1)
    assert first.startswith(PREFIX) and first.endswith("):") and "@" not in first
    assert all(ch in "\n\t" or not (ord(ch) < 32 or 127 <= ord(ch) < 160) for ch in out.text)
    # every "@" left is a decided mention in its canonical form, after white space
    for i, ch in enumerate(body):
        if ch == "@":
            assert i == 0 or body[i - 1].isspace()
            assert any(body.startswith("@" + a, i) for a in out.attached)


# -- which mentions a role may have attached (read_check) -------------------------------


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


def test_a_file_the_role_may_not_read_is_never_attached(user_snapshot):
    snap, project, home = user_snapshot
    check = chatprompt.read_check(snap, project, home)
    assert check("~/.ssh/id_rsa") is None
    assert check("/etc/shadow") is None
    assert check("/proc/self/environ") is None


def test_a_file_in_the_project_is_attached_by_its_absolute_path(user_snapshot):
    snap, project, home = user_snapshot
    check = chatprompt.read_check(snap, project, home)
    assert check("a.py") == os.path.join(project, "a.py")
    assert check("nobody-here") is None  # nothing to attach
    out = enc("look at @a.py", check)
    assert out.text.endswith(f"look at @{project}/a.py")


def test_a_link_is_decided_where_it_leads(user_snapshot):
    snap, project, home = user_snapshot
    os.symlink(os.path.join(home, ".ssh", "id_rsa"), os.path.join(project, "innocent.txt"))
    assert chatprompt.read_check(snap, project, home)("innocent.txt") is None


def test_a_relative_mention_without_a_known_folder_is_inert(user_snapshot):
    snap, _, home = user_snapshot
    assert chatprompt.read_check(snap, "", home)("a.py") is None


def test_the_owner_may_have_any_existing_file_attached(user_snapshot):
    _, project, home = user_snapshot
    check = chatprompt.read_check(None, project, home)
    assert check("~/.ssh/id_rsa") == os.path.join(home, ".ssh", "id_rsa")
