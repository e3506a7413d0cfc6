"""AX Code's last answer, read from its own store (AX Code has no transcript file).

AX Code's Stop hook carries no text (``{}`` on the real 7.7.8), so the answer is read where
AX Code keeps its conversations: a SQLite database in its data folder
(``$XDG_DATA_HOME/ax-code``, else ``~/.local/share/ax-code``), ``ax-code.db`` for releases
and ``ax-code-<channel>.db`` for other builds (7.7.8 ``storage/db.ts``).  Tables used:
``message(id, session_id, time_created, data)`` with ``data.role``, and
``part(message_id, session_id, time_created, data)`` with ``data.type == "text"`` and
``data.text`` (AX's ``sessionID`` is the event's ``session_id``, ``ses_...``).

Read-only, with a short busy timeout; anything unexpected (no folder, another schema, a
locked or damaged file) means no answer, never an error.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Mapping

#: how long to wait for AX Code's writer (it commits each part at once)
BUSY_TIMEOUT = 2.0

_LAST_TEXT = """
SELECT m.id, p.data FROM message m JOIN part p ON p.message_id = m.id
WHERE m.session_id = ? AND p.session_id = ?
ORDER BY m.time_created DESC, m.id DESC, p.time_created ASC, p.id ASC
"""


def data_dir(env: Mapping[str, str]) -> str:
    """AX Code's data folder for ``env`` (xdg-basedir's rule, as AX Code reads it)."""
    base = env.get("XDG_DATA_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"),
                                                   ".local", "share")
    return os.path.join(base, "ax-code")


def databases(folder: str) -> list[str]:
    """The conversation databases in ``folder``, most recently changed first."""
    found = glob.glob(os.path.join(glob.escape(folder), "ax-code*.db"))
    found = [f for f in found if not os.path.basename(f).startswith("ax-code-index")]
    return sorted(found, key=lambda f: _mtime(f), reverse=True)


def _mtime(path: str) -> float:
    newest = 0.0
    for name in (path, path + "-wal"):
        try:
            newest = max(newest, os.stat(name).st_mtime)
        except OSError:
            pass
    return newest


def answer_in(database: str, session_id: str) -> str | None:
    """The text of the session's last assistant message that has text, or None."""
    import sqlite3  # ~1 MB of the daemon's memory: only once an AX Code session answers

    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=BUSY_TIMEOUT)
    except sqlite3.Error:
        return None
    try:
        rows = conn.execute(_LAST_TEXT, (session_id, session_id)).fetchall()
        roles = dict(conn.execute("SELECT id, data FROM message WHERE session_id = ?", (session_id,)))
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    texts: dict[str, list[str]] = {}
    order: list[str] = []
    for message_id, data in rows:
        if _field(roles.get(message_id), "role") != "assistant":
            continue
        part = _doc(data)
        if part.get("type") == "text" and isinstance(part.get("text"), str) and part["text"].strip():
            if message_id not in texts:
                texts[message_id] = []
                order.append(message_id)
            texts[message_id].append(part["text"])
    return "".join(texts[order[0]]).strip() if order else None


def _doc(data: object) -> dict:
    try:
        doc = json.loads(data) if isinstance(data, (str, bytes)) else None
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _field(data: object, key: str) -> object:
    return _doc(data).get(key)


def last_answer(session_id: str, env: Mapping[str, str] | None = None) -> str | None:
    """AX Code's last answer in session ``session_id``, from the first store that has one."""
    if not session_id:
        return None
    for database in databases(data_dir(os.environ if env is None else env)):
        text = answer_in(database, session_id)
        if text:
            return text
    return None
