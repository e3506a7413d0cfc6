"""Permission notes: one per chat message the daemon typed into a session.

The daemon calls ``write_note`` just before it types a message; the hook's
UserPromptSubmit step (``pickup``) matches the prompt Claude took against the
outstanding notes, so the task runs with the rights of whoever sent it.

A note (``<notes dir>/<queued_at µs, 20 digits>-<8 hex>.json``, 0600 in a
0700 folder, written atomically)::

    {"v": 1,
     "msg_id": 42, "chat_id": -100123,
     "author": {"user_id": 7, "label": "ana", "role": "user"},
     "text": "the exact text typed into the session",
     "queued_at": 1764680000.123,
     "exempt": false,                  # owner: no floor, no checks
     "rules": {rule set of the role, no floor,
               "commands_needles": [..], "commands_i_needles": [..]},
     "style": "reply briefly" | null,  # reply style chosen in /settings
     "reply_to": {"text": "...", "sent_at": 1764679000.0} | null}

Which notes a prompt takes (``pickup``): the prompt must be exactly the notes'
texts, in queue order, with nothing but white space around and between them
(Claude Code joins queued messages); a long message, which Claude Code hands
over inside ``<pasted_content>`` tags, is read without the tags.  A prompt
that merely contains a note's text takes nothing.  Every note still waiting is
a possible author of the prompt, so the task gets the strictest rights among
the notes taken and the notes waiting (``hookside.task_rules``): a note left
behind (a crash, a message Claude Code never took) can restrict a prompt,
never lend it rights.

A note whose author has no ``user_id`` never grants the author's role: it is
read as the floor.  A note of another aipager version (no ``"v"``, or another
one) is never taken: it waits, so a terminal prompt gets the floor, until it
expires; other files in the folder, and a file in the folder's place, are no
notes.  The compiled hook reads all of these as this module does (no
decline).  The rules carry their command patterns' needles
(``snapshot.needles_for``) so the hook never runs the dialect parser: the
compiled hook copies them into the task snapshot, and declines to the Python
twin for a pattern without them.  Builtins only on the hook side (``pickup``).
"""

from __future__ import annotations

import posix
import time

from aipager.proto import paths
from aipager.policy import rules
from aipager.proto import fsio

VERSION = 1
#: a note older than this is dropped (its message was never taken)
TTL_SECONDS = 24 * 3600
#: prompts Claude Code synthesises when a background job ends: same task
TASK_NOTIFICATION = "<task-notification>"


def note_name(queued_at: float) -> str:
    """Sortable by queue time, unique even within one microsecond."""
    return f"{int(queued_at * 1_000_000):020d}-{posix.urandom(4).hex()}.json"


def write_note(
    env,
    session: str,
    *,
    msg_id: int,
    chat_id: int,
    author_user_id: int | None,
    author_label: str,
    role: str,
    text: str,
    policy=None,
    style: str | None = None,
    reply_to: dict | None = None,
    queued_at: float | None = None,
) -> str:
    """Record who sent a chat message before the daemon types it (daemon side).

    Args:
        env: environment mapping (for ``aipager.proto.paths``).
        session: ``claude-<name>``.
        msg_id, chat_id: the Telegram message.
        author_user_id: the sender; None makes the note carry the floor only.
        author_label, role: the sender's label and role name.
        text: exactly the text that will be typed.
        policy: a loaded ``model.Policy`` (default: load the owner's file).
        style: reply-style text to hand Claude as extra context.
        reply_to: ``{"text", "sent_at"}`` of the message this one replies to.
        queued_at: when the message was queued (default now).

    Returns:
        The path of the note.

    Raises:
        PolicyError: unknown role or unusable policy file.
        ValueError: empty text (it would match every prompt).
    """
    from aipager.policy import model  # daemon side: the hook never writes notes

    if not text.strip():
        msg = "a permission note needs the text that will be typed"
        raise ValueError(msg)
    policy = policy or model.current_policy(env)
    the_role = policy.role(role)
    exempt = the_role.exempt and author_user_id is not None
    rule_set = model.role_rules(the_role, env) if author_user_id is not None else rules.empty()
    from aipager.policy import floor, snapshot

    for key, icase in (("commands", False), ("commands_i", True)):
        rule_set[key + "_needles"] = snapshot.needles_for(rule_set[key], icase, floor.KNOWN_NEEDLES)
    queued_at = time.time() if queued_at is None else queued_at
    doc = {
        "v": VERSION,
        "msg_id": msg_id,
        "chat_id": chat_id,
        "author": {"user_id": author_user_id, "label": author_label, "role": role},
        "text": text,
        "queued_at": queued_at,
        "exempt": exempt,
        "rules": rule_set,
        "style": style,
        "reply_to": reply_to,
    }
    folder = paths.notes_dir(env, session)
    fsio.ensure_private_dir(folder)
    path = folder + "/" + note_name(queued_at)  # notes_dir never ends in "/"
    fsio.write_json_atomic(path, doc)
    return path


class Note:
    """One note as the hook sees it; ``doc`` is None when it is unreadable."""

    __slots__ = ("name", "path", "doc")

    def __init__(self, name: str, path: str, doc) -> None:
        self.name = name
        self.path = path
        self.doc = doc

    def usable(self) -> bool:
        doc = self.doc
        if not isinstance(doc, dict) or doc.get("v") != VERSION:
            return False
        text = doc.get("text")
        if not isinstance(text, str) or not text.strip():
            return False
        try:
            rules.check_shape(doc.get("rules"))
        except ValueError:
            return False
        return isinstance(doc.get("author"), dict)

    def summary(self) -> dict:
        doc = self.doc if isinstance(self.doc, dict) else {}
        author = doc.get("author")
        if not isinstance(author, dict):
            author = {}
        return {
            "note": self.name,
            "msg_id": doc.get("msg_id"),
            "chat_id": doc.get("chat_id"),
            "author_user_id": author.get("user_id"),
        }


def list_notes(env, session: str) -> list[Note]:
    """Every note of the session, oldest first (unreadable ones included)."""
    folder = paths.notes_dir(env, session)
    try:
        names = sorted(n for n in posix.listdir(folder) if n.endswith(".json"))
    except OSError:
        return []
    out = []
    for name in names:
        path = folder + "/" + name
        out.append(Note(name, path, fsio.read_json_own(path)))
    return out


def outstanding(env, session: str) -> bool:
    """True when some typed message has not been taken by Claude yet."""
    folder = paths.notes_dir(env, session)
    try:
        return any(n.endswith(".json") for n in posix.listdir(folder))
    except OSError:
        return False


def _queued_at(note: Note) -> float:
    value = note.doc.get("queued_at") if isinstance(note.doc, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    # fall back to the name, which the writer derives from queued_at
    try:
        return int(note.name.split("-", 1)[0]) / 1_000_000
    except ValueError:
        return 0.0


#: how Claude Code 2.1.328 hands a long paste to the hooks
PASTE_OPEN = '<pasted_content id="'


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _exact(prompt: str, notes: list) -> list:
    """The notes ``prompt`` is made of, in order, or [] when it is anything else."""
    taken = []
    pos = _skip_space(prompt, 0)
    for note in notes:
        text = note.doc["text"].strip()
        if prompt.startswith(text, pos):
            taken.append(note)
            pos = _skip_space(prompt, pos + len(text))
    return taken if pos == len(prompt) else []


def unwrap_pastes(prompt: str) -> str:
    """``prompt`` with each ``<pasted_content id="X">`` block replaced by its text."""
    import re

    return re.sub(r'<pasted_content id="([^"\n]{1,64})">\n(.*?)\n</pasted_content id="\1">',
                  lambda m: m.group(2), prompt, flags=re.S)


def pickup(env, session: str, prompt: str, now: float):
    """Match ``prompt`` against the notes; delete the consumed and the expired.

    The notes consumed are those the prompt is exactly made of (see the module
    docstring); an expired note is matched like the others, then deleted.

    Returns:
        ``(consumed, expired, remaining)`` lists of Note; ``expired`` holds the
        expired notes not consumed.
    """
    every = list_notes(env, session)
    usable = [n for n in every if n.usable()]
    consumed = _exact(prompt, usable)
    if not consumed and PASTE_OPEN in prompt:
        consumed = _exact(unwrap_pastes(prompt), usable)
    expired: list[Note] = []
    remaining: list[Note] = []
    for note in every:
        if note in consumed:
            continue
        (expired if now - _queued_at(note) > TTL_SECONDS else remaining).append(note)
    for note in consumed + expired:
        fsio.unlink_quiet(note.path)
    return consumed, expired, remaining


def clear_all(env, session: str) -> None:
    """Delete every note of ``session``: a new Claude Code process starts there,
    and no message typed into the old one can be taken any more."""
    for note in list_notes(env, session):
        fsio.unlink_quiet(note.path)


def note_rules(note: Note) -> tuple[bool, dict]:
    """``(exempt, rule set)`` a consumed note grants; no user id → floor only."""
    doc = note.doc
    author = doc["author"]
    if author.get("user_id") is None:
        return False, rules.empty()
    return doc.get("exempt") is True, doc["rules"]
