"""The policy's per-session files around one hook run (tests/hook, tests/policy).

``prepare_policy_files`` lays out what a case asks for before the run;
``collect_policy_files`` reads back (and removes) what the run left, in a
form two runs can be compared by (time stamps dropped).
"""

from __future__ import annotations

import json
import os
import shutil

from aipager import paths
from aipager.policy import floor, notes, rules, snapshot


def write_private(path: str, data: bytes) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
        fh.write(data)


def prepare_policy_files(case: dict, env: dict, session: str) -> None:
    """The session's task snapshot, open-task mark and notes a case asks for.

    'snapshot': {"origin", "exempt", "halted", "rules"} (a rule set laid over
    the empty one), or 'snapshot_raw' (text); 'mark': true; 'notes': texts of
    outstanding permission notes (an owner's); 'notes_dir': true creates the
    folder with no note in it (a temp file only); 'floor' (a rule set laid
    over the empty one) is published as the daemon does, 'floor_raw' (text)
    written as the floor file.
    """
    if "floor" in case:
        floor.publish_floor(env, dict(rules.empty(), **case["floor"]))
    if "floor_raw" in case:
        write_private(paths.floor_file(env), case["floor_raw"].encode())
    snap = case.get("snapshot")
    if snap is not None:
        rule_set = dict(rules.empty(), **snap.get("rules", {}))
        doc = snapshot.make(snap["origin"], snap.get("exempt", False), rule_set)
        snapshot.write(env, session, doc)
        if snap.get("halted"):
            snapshot.record_halt(env, session, snap["halted"], doc)
    if "snapshot_raw" in case:
        write_private(paths.policy_file(env, session), case["snapshot_raw"].encode())
    if case.get("mark"):
        snapshot.mark_open(env, session, 1.0)
    if case.get("notes_dir") or case.get("notes"):
        folder = paths.notes_dir(env, session)
        os.mkdir(folder, 0o700)
        write_private(os.path.join(folder, "x.json.tmp1-ab"), b"{}")
    for i, text in enumerate(case.get("notes", [])):
        path = notes.write_note(env, session, msg_id=i, chat_id=-1, author_user_id=1, author_label="o",
                                role="owner", text=text)
        # a fixed name: it travels in queue_pickup, which the twins must agree on
        os.rename(path, os.path.join(folder, f"{i:020d}-0000000{i}.json"))


def collect_policy_files(env: dict, session: str) -> dict:
    """What a run left (and remove it): the snapshot without its time stamp
    (the twins' clocks differ), whether the mark exists, the notes left."""
    left: dict = {"snapshot": None, "mark": os.path.lexists(paths.task_mark(env, session))}
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
    if os.path.isdir(folder):
        left["notes"] = sorted(n.endswith(".json") for n in os.listdir(folder))
        shutil.rmtree(folder)
    return left
