"""Reading a host's records never raises (``codec.read_out``/``read_state``), and the small
parts around a bad one: its shape check, the bounded dead letters, the hourly telling,
the retries' backoff."""

from __future__ import annotations

import json
import random

import orjson

from aipager.port.model import Session, Task
from aipager.port.outputs import Notice, NoticeName
from aipager.hub import codec, deadletter, ration, shape, supervise
from aipager.hub.codec import BadRecord, OutputRecord, ReplyRecord, Snapshot


def out_record(**kw):
    doc = {"type": "output", "epoch": "e1", "seq": 1, "stamp": [5, 1],
           "out": {"kind": "notice", "session": "claude-jim", "text": "hi", "notice": "api_error"},
           "sess": codec.session_to_json(Session("claude-jim", "jim", 1.0,
                                                 task=Task(seq=1, started_at=2.0)))}
    return {**doc, **kw}


def test_a_good_output_and_answer_read_as_typed_records():
    rec = codec.read_out(orjson.dumps(out_record()))
    assert isinstance(rec, OutputRecord) and rec.out == Notice("claude-jim", "hi")
    assert rec.sess is not None and rec.sess.task.seq == 1 and rec.stamp == (5, 1)
    rec = codec.read_out(orjson.dumps({"type": "reply", "epoch": "e1", "seq": 2, "id": "hub:a:1",
                                       "error": {"type": "SessionNotFound", "message": "no"}}))
    assert isinstance(rec, ReplyRecord) and type(rec.error).__name__ == "SessionNotFound"
    snap = codec.read_state(orjson.dumps({"sessions": [out_record()["sess"]], "stamp": [5, 2],
                                          "heartbeat": 5}))
    assert isinstance(snap, Snapshot) and snap.sessions[0].name == "claude-jim"
    assert snap.version == ""  # (a host too old to name its version)
    snap = codec.read_state(orjson.dumps({"sessions": [], "version": "1.2.3"}))
    assert isinstance(snap, Snapshot) and snap.version == "1.2.3"
    for bad in (5, "x" * 41, None):
        assert isinstance(codec.read_state(orjson.dumps({"sessions": [], "version": bad})),
                          BadRecord), bad


def test_whatever_a_host_sends_is_a_record_or_a_bad_one_never_an_exception():
    cases = [b"", b"\xff", b"[]", b"null", b"5", b'"x"', b"[" * 5000 + b"]" * 5000,
             b"x" * (codec.MAX_RECORD + 1)]
    good = orjson.loads(orjson.dumps(out_record()))  # plain JSON values
    # every top-level and nested value replaced by each odd value in turn
    odd = [None, 5, -1, 1e300, True, "s", [], {}, [1, "a"], {"a": None}, 2**70]
    for key in good:
        for value in odd:
            cases.append(json.dumps({**good, key: value}).encode())
    for part in ("out", "sess"):
        for key in good[part]:
            for value in odd:
                cases.append(json.dumps({**good, part: {**good[part], key: value}}).encode())
    rng = random.Random(7)
    blob = orjson.dumps(good)
    for _ in range(300):
        b = bytearray(blob)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(bytes(b))
    kinds = {type(codec.read_out(c)) for c in cases} | {type(codec.read_state(c)) for c in cases}
    assert kinds <= {OutputRecord, ReplyRecord, Snapshot, BadRecord} and BadRecord in kinds


def test_names_another_hosts_and_the_hubs_own_notices_are_refused():
    for rec in (out_record(out={**out_record()["out"], "session": "claude-web@vm"}),
                out_record(sess={**out_record()["sess"], "label": "web@vm"}),
                out_record(sess={**out_record()["sess"], "name": "claude-other"}),
                out_record(out={**out_record()["out"], "notice": str(NoticeName.HUB_LINK)})):
        assert isinstance(codec.read_out(orjson.dumps(rec)), BadRecord), rec


def test_the_shape_check_names_the_field():
    sess = Session("claude-jim", "jim", 1.0, task=Task(seq="1", started_at=2.0))  # type: ignore[arg-type]
    try:
        shape.check(sess)
    except shape.ShapeError as exc:
        assert "task.seq" in str(exc)
    else:
        raise AssertionError("a task number as text passed")
    shape.check(Session("claude-jim", "jim", 1.0, task=Task(seq=1, started_at=2)))


def test_dead_letters_stay_bounded(tmp_path):
    path = str(tmp_path / "hub" / "dead-letters.jsonl")
    for i in range(2000):
        deadletter.keep(path, deadletter.entry("box", "aipager.box.out", i, "bad", b"x" * 500))
    kept = deadletter.read(path)
    size = sum((tmp_path / "hub" / n).stat().st_size
               for n in ("dead-letters.jsonl", "dead-letters.jsonl.1"))
    assert size <= 2 * deadletter.MAX_BYTES and kept[-1]["seq"] == 1999
    assert [d["seq"] for d in kept] == sorted(d["seq"] for d in kept)
    assert (tmp_path / "hub" / "dead-letters.jsonl").stat().st_mode & 0o777 == 0o600


def test_a_host_is_told_about_once_an_hour_with_the_count_held_back():
    once = ration.OncePer(3600)
    assert once.allow("box", 0) == 0
    assert [once.allow("box", t) for t in (1, 2, 3)] == [None, None, None]
    assert once.allow("vm", 4) == 0  # another host is its own
    assert once.allow("box", 3601) == 3


def test_the_backoff_doubles_up_to_its_cap_and_starts_over():
    b = supervise.Backoff(1.0, 60.0)
    assert [b.next() for _ in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    b.reset()
    assert b.next() == 1
