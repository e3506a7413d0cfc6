"""The policy's per-session files around one hook run (tests/hook, tests/policy).

``prepare_policy_files`` lays out what a case asks for before the run;
``collect_policy_files`` reads back (and removes) what the run left, in a
form two runs can be compared by (time stamps dropped).
"""

from __future__ import annotations

import json
import os
import shutil
import time

from aipager.proto import paths
from aipager.policy import floor, model, notes, rules, snapshot


def write_private(path: str, data: bytes) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
        fh.write(data)


def prepare_policy_files(case: dict, env: dict, session: str) -> None:
    """The session's task snapshot, open-task mark and notes a case asks for.

    'snapshot': {"origin", "exempt", "halted", "rules" (a rule set laid over
    the empty one), "authors", "extra" (keys laid over the made document,
    e.g. odd needles)}, or 'snapshot_raw' (text); 'mark': true; 'notes':
    texts of outstanding permission notes (an owner's); 'notes_dir': true
    creates the folder with no note in it (a temp file only); 'floor' (a rule
    set laid over the empty one) is published as the daemon does,
    'floor_raw' (text) written as the floor file; 'notes_dir_link': true
    makes the notes folder a symlink to the real one; 'snapshot_dir' /
    'mark_dir': true put a folder where the hook writes the snapshot / mark;
    'snapshot_owner': a uid the snapshot is given to (see ``_give``);
    'notes_file': true puts a plain file where the notes folder goes.

    Richer notes (``note_docs`` / ``note_raw``, see ``_write_note_docs`` and
    ``_write_raw_notes``) are dated from 'now' (default: the clock), so that
    two runs of one case can share it and so get the same note names.
    'policy' (a policy document) gives the roles those notes are written
    with; 'floor_policy': true publishes that policy's effective floor.
    """
    policy = model.from_document(case["policy"]) if "policy" in case else model.Policy()
    if "floor" in case:
        floor.publish_floor(env, dict(rules.empty(), **case["floor"]))
    if case.get("floor_policy"):
        model.publish(env, policy)
    if "floor_raw" in case:
        write_private(paths.floor_file(env), case["floor_raw"].encode())
    snap = case.get("snapshot")
    if snap is not None:
        rule_set = dict(rules.empty(), **snap.get("rules", {}))
        doc = snapshot.make(snap["origin"], snap.get("exempt", False), rule_set, snap.get("authors", ()))
        doc.update(snap.get("extra", {}))
        snapshot.write(env, session, doc)
        if snap.get("halted"):
            snapshot.record_halt(env, session, snap["halted"], doc)
    if "snapshot_raw" in case:
        write_private(paths.policy_file(env, session), case["snapshot_raw"].encode())
    if case.get("mark"):
        snapshot.mark_open(env, session, 1.0)
    for key, path in (("snapshot_dir", paths.policy_file(env, session)), ("mark_dir", paths.task_mark(env, session))):
        if case.get(key):
            os.mkdir(path, 0o700)  # the hook cannot write it
    if "snapshot_owner" in case:
        _give(paths.policy_file(env, session), case["snapshot_owner"])
    if case.get("notes_file"):
        # a plain file where the notes folder goes (another aipager version's)
        write_private(paths.notes_dir(env, session), b"turn-open\n")
        return
    if not any(case.get(key) for key in ("notes_dir", "notes", "note_docs", "note_raw")):
        return
    folder = paths.notes_dir(env, session)
    os.mkdir(folder, 0o700)
    write_private(os.path.join(folder, "x.json.tmp1-ab"), b"{}")
    for i, text in enumerate(case.get("notes", [])):
        path = notes.write_note(env, session, msg_id=i, chat_id=-1, author_user_id=1, author_label="o",
                                role="owner", text=text)
        # a fixed name: it travels in queue_pickup, which the twins must agree on
        os.rename(path, os.path.join(folder, f"{i:020d}-0000000{i}.json"))
    now = case.get("now", time.time())
    _write_note_docs(case.get("note_docs", ()), env, session, policy, now)
    _write_raw_notes(case.get("note_raw", ()), folder, now)
    if case.get("notes_dir_link"):
        # the folder is a symlink to where the notes really are
        os.rename(folder, folder + ".real")
        os.symlink(folder + ".real", folder)


def dated_name(queued_at: float, tag: int) -> str:
    """A note name as ``notes.note_name`` gives, with a fixed tag instead of random hex."""
    return f"{int(queued_at * 1_000_000):020d}-{tag:08x}.json"


def _write_note_docs(specs, env: dict, session: str, policy, now: float) -> None:
    """Notes as the daemon writes them (``notes.write_note``), one per spec.

    A spec: {"text", "role" (built-in or one of 'policy'), "user_id" (int or
    None), "label", "style", "reply_to" ({"text", "sent_at"}), "age_s"
    (queued_at = now - age_s; over 24 h is expired), "msg_id", "chat_id"};
    only "text" is required.  The note is renamed to ``dated_name(queued_at,
    index)``: its order is its age's (oldest first), then the list's.
    """
    folder = paths.notes_dir(env, session)
    for i, spec in enumerate(specs):
        queued_at = now - spec.get("age_s", 0.0)
        path = notes.write_note(
            env, session, msg_id=spec.get("msg_id", 100 + i), chat_id=spec.get("chat_id", -100),
            author_user_id=spec.get("user_id", 7), author_label=spec.get("label", "ana"),
            role=spec.get("role", "user"), text=spec["text"], policy=policy,
            style=spec.get("style"), reply_to=spec.get("reply_to"), queued_at=queued_at,
        )
        os.rename(path, os.path.join(folder, dated_name(queued_at, i)))


def _give(path: str, uid: int) -> None:
    """chown to ``uid`` (a foreign file).  Only root may: elsewhere the case cannot be
    built, and it is skipped rather than run as a case about our own file."""
    import pytest

    try:
        os.chown(path, uid, uid, follow_symlinks=False)
    except PermissionError:
        pytest.skip("making a file another user's needs root")


_ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def _write_raw_notes(entries, folder: str, now: float) -> None:
    """Hand-made odd notes.

    An entry is ``(name, bytes)``, or a dict: "name" (default ``dated_name(now
    - age_s, 0x10000 + index)``; "{now_us}" in it becomes now in µs,
    "{now_us_ar}" the same in Arabic-Indic digits), "age_s", and one of
    "data" (bytes), "doc"
    (JSON-encoded; a "queued_at" of ``{"age_s": x}`` becomes ``now - x``),
    "symlink" (bytes of a note the link points at, kept in the folder under
    a name that is no note's), "dir": true, "fifo": true; "owner": a uid the
    file is given to (``_give``).
    """
    for i, entry in enumerate(entries):
        if isinstance(entry, tuple):
            entry = {"name": entry[0], "data": entry[1]}
        name = entry.get("name") or dated_name(now - entry.get("age_s", 0.0), 0x10000 + i)
        now_us = str(int(now * 1_000_000))
        # Arabic-Indic digits: int() reads them, a byte-wise parser does not
        name = name.replace("{now_us}", now_us).replace("{now_us_ar}", now_us.translate(_ARABIC_INDIC))
        path = os.path.join(folder, name)
        if "doc" in entry:
            doc = dict(entry["doc"])
            if isinstance(doc.get("queued_at"), dict) and "age_s" in doc["queued_at"]:
                doc["queued_at"] = now - doc["queued_at"]["age_s"]
            write_private(path, json.dumps(doc).encode())
        elif "symlink" in entry:
            target = os.path.join(folder, f"target-{i}.data")
            write_private(target, entry["symlink"])
            os.symlink(target, path)
        elif entry.get("dir"):
            os.mkdir(path, 0o700)
        elif entry.get("fifo"):
            os.mkfifo(path, 0o600)
        else:
            write_private(path, entry["data"])
        if "owner" in entry:
            _give(path, entry["owner"])


def collect_policy_files(env: dict, session: str) -> dict:
    """What a run left (and remove it): the snapshot without its time stamp
    (the twins' clocks differ), whether the mark exists, the notes left
    ("notes": a .json flag per file, "note_names": the names), "dirs": which
    of snapshot / mark was still a folder."""
    dirs = []
    for key, path in (("snapshot", paths.policy_file(env, session)), ("mark", paths.task_mark(env, session))):
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)  # 'snapshot_dir' / 'mark_dir': still a folder (else it is read below)
            dirs.append(key)
    left: dict = {"snapshot": None, "mark": os.path.lexists(paths.task_mark(env, session))}
    if dirs:
        left["dirs"] = dirs
    path = paths.policy_file(env, session)
    if os.path.lexists(path):
        with open(path, "rb") as fh:
            data = fh.read()
        try:
            doc = json.loads(data)
            assert isinstance(doc.pop("written_at"), float)
            left["snapshot"] = doc
        except (ValueError, KeyError, TypeError, AttributeError):
            left["snapshot"] = data.decode("utf-8", "replace")
        left["snapshot_mode"] = os.stat(path).st_mode & 0o777
        os.unlink(path)
    if left["mark"]:
        with open(paths.task_mark(env, session), "rb") as fh:
            left["mark_is_time"] = isinstance(float(fh.read()), float)
        os.unlink(paths.task_mark(env, session))
    folder = paths.notes_dir(env, session)
    if os.path.isfile(folder) and not os.path.islink(folder):
        left["notes_file"] = True
        os.unlink(folder)
    if os.path.islink(folder):
        left["notes_dir_link"] = True
        os.unlink(folder)
        folder += ".real"
    if os.path.isdir(folder):
        names = os.listdir(folder)
        left["notes"] = sorted(n.endswith(".json") for n in names)
        left["note_names"] = sorted(names)
        shutil.rmtree(folder)
    return left
