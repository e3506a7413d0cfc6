"""The task snapshot (``paths.policy_file``) and the open-task mark.

Written by the hook at UserPromptSubmit, read at every PreToolUse by both
matchers, so the format is flat and the C scanner can read it::

    {"v": 1,
     "origin": "terminal" | "telegram" | "unattributed",
     "exempt": false,              # owner exemption: no checks at all
     "allowed_tools": null | [..], "denied_tools": [..],
     "no_access": [..], "no_write": [..],      # absolute globs
     "commands": [..], "commands_i": [..],     # dialect regexes
     "commands_needles": [[..] | null, ..],    # prefilter, one per pattern
     "commands_i_needles": [[..] | null, ..],  # (lower case)
     "authors": [{"user_id", "label", "role", "msg_id", "chat_id"}],
     "written_at": 1764680000.0,
     "halted": "reason"}           # only after a block; spliced in last

``halted`` is never written by ``write``: it is appended by ``record_halt``
as the last key, so the first and only occurrence is the one both JSON
readers see.  Builtins only (hook hot path).
"""

from __future__ import annotations

from aipager.proto import paths
from aipager.policy import rules
from aipager.proto import fsio

VERSION = 1
ORIGINS = ("terminal", "telegram", "unattributed")


class SnapshotError(ValueError):
    """The snapshot exists but is unusable: PreToolUse fails closed."""


def normalise(doc) -> dict:
    """Check a decoded snapshot and return it; raise SnapshotError if unusable."""
    if not isinstance(doc, dict) or doc.get("v") != VERSION:
        msg = "snapshot has no supported version"
        raise SnapshotError(msg)
    if doc.get("origin") not in ORIGINS or not isinstance(doc.get("exempt"), bool):
        msg = "snapshot origin or exemption is invalid"
        raise SnapshotError(msg)
    halted = doc.get("halted")
    if halted is not None and not isinstance(halted, str):
        msg = "snapshot halt is not a string"
        raise SnapshotError(msg)
    try:
        rules.check_shape(doc)
    except ValueError as exc:
        raise SnapshotError(str(exc)) from exc
    doc.setdefault("halted", None)
    return doc


def make(origin: str, exempt: bool, rule_set: dict, authors=(), now: float = 0.0, known=None) -> dict:
    """A snapshot document for ``rule_set`` (not yet written).

    ``known`` maps ``(pattern, icase)`` to needles already computed (see
    ``needles_of``, ``floor.KNOWN_NEEDLES``): the dialect parser is only
    loaded for patterns it lacks.
    """
    doc = {"v": VERSION, "origin": origin, "exempt": bool(exempt)}
    for key in rules.RULE_KEYS:
        doc[key] = rule_set[key]
    # per command pattern, literals one of which any match contains (or null):
    # both matchers skip the regex for a subject holding none of them.
    doc["commands_needles"] = needles_for(rule_set["commands"], False, known)
    doc["commands_i_needles"] = needles_for(rule_set["commands_i"], True, known)
    doc["authors"] = list(authors)
    doc["written_at"] = now
    return doc


_MISSING = object()


def needles_for(patterns: list, icase: bool, known=None) -> list:
    """Per pattern, the literals one of which any match contains (or None)."""
    out = []
    for pattern in patterns:
        found = known.get((pattern, icase), _MISSING) if known else _MISSING
        if found is _MISSING:
            # imported here: the hook's usual snapshots need no parser
            from aipager.policy import dialect

            found = dialect.required_literals(pattern, icase)
        out.append(found)
    return out


def needles_of(*docs: dict) -> dict:
    """``(pattern, icase) -> needles`` the given snapshots or rule sets already
    carry (a later doc wins).  Only well-formed entries (None or a list of
    strings) count: the compiled hook copies exactly these and declines
    where it would have to run the dialect parser."""
    known: dict = {}
    for doc in docs:
        for key, icase in (("commands", False), ("commands_i", True)):
            patterns, needles = doc.get(key), doc.get(key + "_needles")
            if isinstance(patterns, list) and isinstance(needles, list) and len(patterns) == len(needles):
                known.update(((p, icase), n) for p, n in zip(patterns, needles, strict=True) if _needle_shape(n))
    return known


def _needle_shape(value) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def for_floor(floor: dict, now: float = 0.0, known=None) -> dict:
    """The snapshot of a task nobody can be named for: the floor alone."""
    return make("unattributed", False, floor, now=now, known=known)


def read(env, session: str) -> dict | None:
    """The session's snapshot, None when there is none.

    Raises:
        SnapshotError: it exists but is foreign, a symlink or corrupt.
    """
    path = paths.policy_file(env, session)
    data = fsio.read_own(path)
    if data is None:
        if fsio.lexists(path):
            msg = "snapshot is not our own regular file"
            raise SnapshotError(msg)
        return None
    try:
        doc = fsio.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SnapshotError("snapshot is not valid JSON") from exc
    return normalise(doc)


def write(env, session: str, doc: dict) -> None:
    """Replace the session's snapshot atomically (0600)."""
    doc = {k: v for k, v in doc.items() if k != "halted"}
    fsio.write_json_atomic(paths.policy_file(env, session), doc)


def record_halt(env, session: str, reason: str, fallback: dict) -> None:
    """Make every later tool call of this task fail until the next prompt.

    Splices ``"halted"`` in as the last key of the current snapshot, or writes
    ``fallback`` (the rules the decision used) halted when there is none.
    """
    path = paths.policy_file(env, session)
    data = fsio.read_own(path)
    text = data.decode("utf-8", "replace").rstrip() if data else ""
    if not (text.startswith("{") and text.endswith("}")) or '"halted"' in text:
        text = fsio.dumps({k: v for k, v in fallback.items() if k != "halted"})
    body = text[:-1].rstrip()
    sep = "" if body.endswith("{") else ","
    spliced = body + sep + '"halted":' + fsio.dumps(reason) + "}"
    fsio.write_atomic(path, spliced.encode("utf-8"))


def open_task(env, session: str) -> bool:
    """True while a task is open (the mark exists)."""
    return fsio.lexists(paths.task_mark(env, session))


def mark_open(env, session: str, now: float) -> None:
    fsio.write_atomic(paths.task_mark(env, session), f"{now}\n".encode())


def clear_mark(env, session: str) -> bool:
    return fsio.unlink_quiet(paths.task_mark(env, session))
