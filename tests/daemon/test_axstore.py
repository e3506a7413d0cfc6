"""daemon/axstore.py against databases in AX Code 7.7.8's schema (``message`` and ``part``
rows holding JSON, as the real AX Code wrote them in scripts/axcode_real.sh's run)."""

from __future__ import annotations

import json
import os
import sqlite3

from aipager.daemon import axstore

SES = "ses_-e5db7792123ffeG4qPQ79VnB6"


def make_db(path, messages) -> str:
    """``messages``: (id, session, time, role, [part data...]) in AX Code's layout."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,"
                 " time_updated INTEGER, data TEXT)")
    conn.execute("CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,"
                 " time_created INTEGER, time_updated INTEGER, data TEXT)")
    for n, (mid, ses, when, role, parts) in enumerate(messages):
        conn.execute("INSERT INTO message VALUES (?,?,?,?,?)",
                     (mid, ses, when, when, json.dumps({"role": role, "time": {"created": when}})))
        for k, part in enumerate(parts):
            conn.execute("INSERT INTO part VALUES (?,?,?,?,?,?)",
                         (f"prt_{n}_{k}", mid, ses, when + k, when + k, json.dumps(part)))
    conn.commit()
    conn.close()
    return str(path)


def text(t: str) -> dict:
    return {"type": "text", "text": t}


TOOL = {"type": "tool", "tool": "bash", "state": {"status": "completed"}}
FINISH = {"type": "step-finish", "reason": "stop"}

REAL_RUN = [
    ("msg_1", SES, 100, "user", [text("Please do KEY1")]),
    ("msg_2", SES, 200, "assistant", [text("running"), TOOL, FINISH]),
    ("msg_3", SES, 300, "assistant", [TOOL, FINISH]),
    ("msg_4", SES, 400, "assistant", [text("Finished "), text("KEY1."), FINISH]),
    ("msg_5", "ses_other", 500, "assistant", [text("Another session.")]),
]


def env_for(tmp_path) -> dict:
    return {"HOME": str(tmp_path / "home")}


def test_the_last_assistant_text_of_the_session(tmp_path):
    env = env_for(tmp_path)
    make_db(os.path.join(axstore.data_dir(env), "ax-code-local.db"), REAL_RUN)
    assert axstore.last_answer(SES, env) == "Finished KEY1."
    assert axstore.last_answer("ses_other", env) == "Another session."
    assert axstore.last_answer("ses_unknown", env) is None
    assert axstore.last_answer("", env) is None


def test_a_tool_only_last_turn_falls_back_to_the_last_text(tmp_path):
    env = env_for(tmp_path)
    make_db(os.path.join(axstore.data_dir(env), "ax-code.db"), REAL_RUN[:3])
    assert axstore.last_answer(SES, env) == "running"


def test_xdg_data_home_and_every_channel_database(tmp_path):
    env = {"HOME": str(tmp_path / "nohome"), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    assert axstore.data_dir(env) == str(tmp_path / "xdg" / "ax-code")
    make_db(str(tmp_path / "xdg" / "ax-code" / "ax-code.db"), REAL_RUN[:2])
    make_db(str(tmp_path / "xdg" / "ax-code" / "ax-code-beta.db"), REAL_RUN[3:4])
    assert axstore.last_answer(SES, env) in ("running", "Finished KEY1.")  # whichever has it
    os.utime(str(tmp_path / "xdg" / "ax-code" / "ax-code.db"), (1, 1))
    assert axstore.last_answer(SES, env) == "Finished KEY1."  # the newest first


def test_nothing_usable_is_no_answer_never_an_error(tmp_path):
    env = env_for(tmp_path)
    assert axstore.last_answer(SES, env) is None  # no folder at all
    folder = axstore.data_dir(env)
    os.makedirs(folder)
    with open(os.path.join(folder, "ax-code.db"), "wb") as fh:
        fh.write(b"not a database" * 100)
    assert axstore.last_answer(SES, env) is None
    conn = sqlite3.connect(os.path.join(folder, "ax-code-other.db"))
    conn.execute("CREATE TABLE message (x)")  # another schema
    conn.close()
    assert axstore.last_answer(SES, env) is None
    make_db(os.path.join(folder, "ax-code-index.db"), REAL_RUN)  # the code index: not a store
    assert axstore.databases(folder) == sorted(axstore.databases(folder), key=axstore._mtime,
                                               reverse=True)
    assert not any(p.endswith("ax-code-index.db") for p in axstore.databases(folder))
    assert axstore.last_answer(SES, env) is None
