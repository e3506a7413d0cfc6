r"""A person's message, encoded so Claude Code can read it only as their words.

Claude Code's input line reads more than prompts: a leading ``!`` runs a shell
command (no PreToolUse), ``/`` one of its commands, ``#`` its memory, ``&`` a
background job; a whole prompt that is an exit word ends the session; an
``@path`` mention attaches a file with no tool call (no role, no floor, no
audit); some characters are stripped before any of that is decided.  Its
grammar is larger than any copy of it and changes with each release, so
aipager does not detect: it *encodes*, the way a parameterised query never
lets data read as SQL.  What is typed for a message is always::

    Via aipager, from ana (user):
    <the person's words, control bytes removed, every @ made inert>

- The first line is fixed and starts with a letter, so no first-character
  command, exit word or lone path can form, whatever the words hold.
- Every ``@`` (U+0040) becomes ``＠`` (U+FF20), which the model reads as the
  same sign and Claude Code does not read as a mention, except a mention this
  sender's rights allow as a Read (``read_check``): that one is written in the
  one canonical form its decision covered, ``@/absolute/path`` of plain
  characters followed by white space, so Claude Code attaches exactly the file
  that was decided.
- Control bytes, escape sequences and the invisible characters Claude Code
  strips at submit are removed: nothing acts as a key, the bracketed paste
  cannot be ended early, and what Claude Code submits is what was typed.
- An absolute path naming an image (Claude Code attaches a pasted one, as it
  attaches a mention) is decided like a mention: kept when the sender may
  read that file, else written with a one-dot leader before its extension.
  ``ultraplan`` (which Claude Code rewrites into a command) gets a
  non-breaking hyphen, a final ``\`` (which would keep the Enter from
  sending) a space after it.  If any other reading changes the text, the
  hook sees a prompt that is no note and blocks it.

The hook takes a prompt as a chat message only when it is exactly one (or a
run) of the waiting notes' encodings (``policy.notes``); a prompt that begins
with ``PREFIX`` but is no waiting note, or any other prompt while a member's
note waits, is blocked (``hookside``).  ``words`` gives the person's words
back for display.

Pure, but for ``read_check``, which looks at the named files the way Claude
Code would.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from typing import Callable

#: how every encoded message starts (the hook recognises it: ``hookside``)
PREFIX = "Via aipager, from "
_HEADER_END = "):\n"
#: what an inert ``@`` is written as
INERT_AT = "\uff20"
#: the longest sender label written in the first line
LABEL_CAP = 40

# A mention the person wrote plainly: "@" at the start or after white space, a
# run of path characters, then white space or the end.  Only these can be
# decided; any other "@" is made inert, whatever Claude Code would make of it.
_CANDIDATE = re.compile(r"(?:(?<=\s)|^)@([A-Za-z0-9_./~+-]+)(?=\s|$)")
# The one form a decided mention is written in: absolute, plain characters,
# ending in a word character (Claude Code strips trailing punctuation and
# "#..." suffixes; neither can occur here).
_CANONICAL = re.compile(r"/(?:[A-Za-z0-9_.+-]+/)*[A-Za-z0-9_.+-]*[A-Za-z0-9_]")


@dataclass(frozen=True)
class Encoded:
    """What is typed (``text``) and what the person wrote (``words``, cleaned)."""

    text: str
    words: str
    #: the mentions written in their canonical form (absolute paths)
    attached: tuple[str, ...] = ()


#: invisible characters Claude Code 2.1.328 removes at submit although they are not
#: format characters (Hangul fillers, the grapheme joiner, Khmer vowels, Mongolian and
#: other variation selectors): removed first, so what it submits is what was typed
_FILLERS = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f"
                     "\u3164\uffa0" + "".join(chr(c) for c in range(0xFE00, 0xFE0F)))
#: kept although invisible: they join emoji (❤️, 👩‍💻)
_EMOJI_JOINERS = frozenset("\u200d\ufe0f")
# An absolute path naming an image: Claude Code attaches a pasted piece that is one, as
# it attaches an @-mention.  Decided like a mention: a file the sender may read stays as
# written; any other is written with a one-dot leader before its extension, and stays words.
_IMAGE_PATH = re.compile(r"""(?:(?<=\s)|^)(["']?)((?:/|~/|[A-Za-z]:\\)\S*?)\.(png|jpe?g|gif|webp)(?=["'\\]*(?:\s|$))""",
                         re.I)
# Claude Code rewrites this keyword into one of its commands
_COMMAND_WORD = re.compile(r"ultraplan", re.I)


def clean(text: str) -> str:
    """The text without control bytes, escape sequences and the invisible characters
    Claude Code would strip (line breaks become ``\\n``, tabs stay): nothing in it can
    act as a key, the paste cannot be ended early, and nothing is removed at submit."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u2028", "\n").replace("\u2029", "\n").replace("\x85", "\n")
    return "".join(ch for ch in text if ch in "\n\t" or ch in _EMOJI_JOINERS or (
        unicodedata.category(ch) not in ("Cc", "Cf", "Co", "Cs", "Cn") and ch not in _FILLERS
        and not 0xE0100 <= ord(ch) <= 0xE01EF))


def label_of(label: str) -> str:
    """The sender as the first line names them: letters, digits, ``_ - .`` and single
    spaces (a leading ``@`` dropped), at most ``LABEL_CAP`` characters; what ``clean``
    removes goes first (a Hangul filler is a letter Claude Code strips at submit)."""
    kept = "".join(ch if (ch.isalnum() or ch in "_-.") else " " for ch in clean(label))
    kept = " ".join(kept.split())[:LABEL_CAP].strip()
    return kept or "someone"


def _role_of(role: str) -> str:
    return "".join(ch for ch in role if ch.isalnum() or ch in "_-")[:32] or "user"


def header(label: str, role: str) -> str:
    return f"{PREFIX}{label_of(label)} ({_role_of(role)}{_HEADER_END}"


def encode(text: str, *, label: str, role: str,
           mention_ok: Callable[[str], str | None] | None = None, inert: str = "") -> Encoded:
    """The encoding of a message.

    Args:
        text: the message as the person sent it.
        label, role: who sent it (named in the first line).
        mention_ok: ``(path as written) -> absolute path | None`` for each plain
            mention: the path when this sender may have it attached (a Read the
            policy allows, of a file that exists), else None.  Without it every
            ``@`` is inert.
        inert: more ASCII signs the agent's input line acts on (Codex: ``$``), each
            written as its fullwidth form, which the model reads as the same sign.

    Raises:
        ValueError: nothing is left to send.
    """
    words = clean(text).strip()
    if not words:
        msg = "an empty message is not typed"
        raise ValueError(msg)
    attached: list[str] = []
    out: list[str] = []
    pos = 0
    for m in _CANDIDATE.finditer(words):
        out.append(words[pos:m.start()].replace("@", INERT_AT))
        full = mention_ok(m.group(1)) if mention_ok is not None else None
        if full is not None and _CANONICAL.fullmatch(full) and "/../" not in full + "/":
            out.append("@" + full)
            attached.append(full)
        else:
            out.append(INERT_AT + m.group(1))
        pos = m.end()
    out.append(words[pos:].replace("@", INERT_AT))
    def image(m: re.Match[str]) -> str:
        path = m.group(2) + "." + m.group(3)
        full = mention_ok(path) if mention_ok is not None else None
        sep = "." if full is not None and full == os.path.normpath(path) else "\u2024"
        return m.group(1) + m.group(2) + sep + m.group(3)

    body = _COMMAND_WORD.sub(lambda m: m.group(0)[:5] + "\u2011" + m.group(0)[5:],
                             _IMAGE_PATH.sub(image, "".join(out)))
    if inert:
        body = body.translate({ord(c): ord(c) + 0xFEE0 for c in inert if "!" <= c <= "~"})
    if body.endswith("\\"):
        body += " "  # a backslash before the Enter would make it a line break: not sent
    return Encoded(header(label, role) + body, words, tuple(attached))


def is_encoded(text: str) -> bool:
    """True for a text ``encode`` made (the terminal types nothing else as a message)."""
    if not text.startswith(PREFIX) or clean(text) != text:
        return False
    head, sep, body = text.partition(_HEADER_END)
    return bool(sep) and "\n" not in head and "@" not in head and bool(body.strip())


def words(prompt: str) -> str:
    """The person's words of an encoded prompt, for display (inert ``@`` shown as ``@``);
    any other prompt as it is."""
    text = prompt.lstrip()
    if text.startswith("<pasted_content"):
        from aipager.policy import notes  # how Claude Code hands over a long paste

        text = notes.unwrap_pastes(text).lstrip()
    if not text.startswith(PREFIX):
        return prompt
    head, sep, body = text.partition(_HEADER_END)
    if not sep or "\n" in head:
        return prompt
    return body.replace(INERT_AT, "@")


def sender_of(prompt: str) -> str:
    """The label an encoded prompt names, or ``""``."""
    text = prompt.lstrip()
    if not text.startswith(PREFIX):
        return ""
    head, sep, _ = text.partition(_HEADER_END)
    if not sep or "\n" in head:
        return ""
    return head[len(PREFIX):].rsplit(" (", 1)[0]


def may_read(snap: dict | None, cwd: str, home: str) -> Callable[[str], bool]:
    """Whether a Read of a path (an LS of a folder) would be allowed for the task
    (``snap``: the person's rules with the floor; None: the owner, who may read anything),
    where the path is and where it leads.  Undecidable: no."""
    from aipager.policy import _match_py

    def check(path: str) -> bool:
        if snap is None:
            return True
        try:
            full = os.path.normpath(_match_py.expand(path, cwd, home))
            tool = "LS" if os.path.isdir(full) else "Read"
            key = "path" if tool == "LS" else "file_path"
            # a link is decided where it leads too: Claude Code reads the target
            for target in dict.fromkeys((full, os.path.realpath(full))):
                decision, _reason = _match_py.decide(snap, tool, {key: target}, cwd, home)
                if decision == _match_py.DENY:
                    return False
        except (_match_py.BadInput, OSError, ValueError):
            return False
        return True

    return check


def read_check(snap: dict | None, cwd: str, home: str) -> Callable[[str], str | None]:
    """A ``mention_ok`` that decides each mentioned path as a Read of it would be decided
    for the task (``may_read``), so a mention reaches no further than the tools do; a
    path that names nothing is written inert."""
    from aipager.policy import _match_py

    allowed = may_read(snap, cwd, home)

    def check(path: str) -> str | None:
        try:
            full = os.path.normpath(_match_py.expand(path, cwd, home))
        except (_match_py.BadInput, ValueError):
            return None
        return full if os.path.exists(full) and allowed(full) else None

    return check


__all__ = ["INERT_AT", "PREFIX", "Encoded", "clean", "encode", "header", "is_encoded",
           "label_of", "may_read", "read_check", "sender_of", "words"]
