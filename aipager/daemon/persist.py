"""The daemon's saved state: written atomically, readable while the daemon is down.

``load_state(env)`` is what ``aipager status [--json]`` prints.  Schema
(``version`` 1; every key always present unless marked optional):

    {
      "version": 1,
      "state_error": str,           # optional, from ``load_state``: the file cannot be used
      "daemon": {
        "pid": int | null,          # the daemon that wrote the file
        "alive": bool,              # computed on read: that pid runs and its socket exists
        "started_at": float,        # wall-clock seconds
        "saved_at": float,
        "stopped_at": float | null, # set by a clean shutdown
        "socket": str,
        "state_error": str | null,  # optional: the saved state was damaged at start
                                    #   (``restore_saved``: what, where it was kept)
        "policy_error": str | null, # optional: the policy file cannot be used (``floorwatch``)
        "journal_seq": int,         # optional: the last ``journal`` frame this state includes
        "counters": {"received", "handled", "ignored", "unhandled", "malformed",
                     "errors", "repeats", "spool_replayed", "spool_stale",
                     "audit_failures", ...: int}
      },
      "sessions": [                 # one per session, ended (state "gone") ones included
        {
          "name": "claude-jim", "label": "jim",
          "state": "unknown" | "ready" | "working" | "waiting" | "gone",
          "model": str, "context_pct": float | null, "cost_usd": float | null,
          "total_input": int | null, "total_output": int | null,
          "lines_added": int | null, "lines_removed": int | null,
          "waiting_for": "permission" | "question" | null,
          "rows_count": int,        # tool rows kept (≤ 200)
          "running_subagents": int, "running_background_commands": int,
          "claude_session_id", "transcript_path", "cwd", "permission_mode": str,
          "registered_at", "last_event_at": float, "gone_at": float | null, "end_reason": str,
          "task": null | {"seq", "started_at", "ended_at", "prompt", "prompt_id", "origin",
                          "commentary", "blocked", "error", ...},
          "rows": [{"id", "tool", "summary", "task", "agent", "status", "started_at",
                    "ended_at", "error"}],
          "subagents": [{"id", "type", "description", "activity", "tool_count", "status",
                         "parent", "task", "started_at", "last_seen", "ended_at", ...}],
          "background_commands": [{"id", "command", "status", "task", "started_at", "ended_at"}],
          "queued_messages": [{"msg_id", "chat_id", "text", "sender", "status", "queued_at"}],
          "delivered_answers": [str],   # digests of answers already sent (never resent)
          "card": str,              # the activity card (``render.card``) as of ``saved_at``
          "notices": [{"name", "text", "at"}],  # the latest 20 notices, newest last
          "requests": [...], "agent_calls": [...], "context_warned": bool, ...
        }
      ]
    }

The derived keys (``waiting_for``, ``rows_count``, ``running_*``, ``card``) are
written for readers; ``restore`` ignores them.  ``card`` is the same pure
rendering the chat gets (header only when no task ran yet).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Mapping, NamedTuple

import orjson

from aipager import dtach
from aipager.proto import paths
from aipager.daemon import salvage
from aipager.texts import render
from aipager.port.model import Session
from aipager.daemon.registry import Registry
from aipager.proto.fsnames import KEPT_INFIX, keep_aside, write_private

STATE_VERSION = 1

log = logging.getLogger("aipager.daemon")


def empty_state(env: Mapping[str, str]) -> dict[str, Any]:
    return {
        "version": STATE_VERSION,
        "daemon": {"pid": None, "alive": False, "started_at": None, "saved_at": None,
                   "stopped_at": None, "socket": paths.socket_path(env), "counters": {}},
        "sessions": [],
    }


def session_entry(sess: Session, now: float) -> dict[str, Any]:
    out = sess.to_dict()
    out["waiting_for"] = sess.waiting_for()
    out["rows_count"] = len(sess.rows)
    out["running_subagents"] = len(sess.running_agents())
    out["running_background_commands"] = len(sess.running_bg())
    out["card"] = render.card(sess, now)
    return out


def build_state(registry: Registry, daemon: Mapping[str, Any]) -> dict[str, Any]:
    now = registry.clock()
    return {
        "version": STATE_VERSION,
        "daemon": dict(daemon),
        "sessions": [session_entry(s, now) for s in registry],
    }


def save_state(env: Mapping[str, str], registry: Registry, daemon: Mapping[str, Any]) -> None:
    """Write the registry and the daemon facts to ``paths.daemon_state_file``."""
    state = build_state(registry, {**daemon, "saved_at": time.time()})
    write_private(paths.daemon_state_file(env), orjson.dumps(state))


def _pid_alive(pid: Any) -> bool:
    # The saved pid is untrusted file content: only a positive int is asked about.
    return isinstance(pid, int) and pid > 0 and dtach.alive(pid)


def load_state(env: Mapping[str, str]) -> dict[str, Any]:
    """The saved state (see the module docstring), with ``daemon.alive`` computed now.

    Never raises for a missing or unreadable file: it returns an empty state
    (``daemon.alive`` false, no sessions), so ``aipager status`` always prints;
    a file that exists but cannot be used adds ``state_error`` (what is wrong).
    """
    path = paths.daemon_state_file(env)
    try:
        with open(path, "rb") as fh:
            state = orjson.loads(fh.read())
    except FileNotFoundError:
        return empty_state(env)
    except OSError as exc:
        return {**empty_state(env), "state_error": f"{path}: cannot read it ({exc.strerror})"}
    except orjson.JSONDecodeError as exc:
        return {**empty_state(env), "state_error": f"{path}: damaged, not valid JSON ({exc}); "
                "the daemon keeps it aside at its next start and restores what it can"}
    if not isinstance(state, dict) or not isinstance(state.get("daemon"), dict):
        return {**empty_state(env), "state_error": f"{path}: damaged, not the saved-state shape"}
    state.setdefault("sessions", [])
    daemon = state["daemon"]
    daemon["alive"] = (
        daemon.get("stopped_at") is None
        and _pid_alive(daemon.get("pid"))
        and os.path.exists(str(daemon.get("socket") or paths.socket_path(env)))
    )
    return state


def restore(registry: Registry, state: Mapping[str, Any]) -> list[str]:
    """Load the usable sessions of a decoded saved state into ``registry``.

    Returns:
        What was wrong with the records (``salvage``); empty when all were sound.
    """
    problems: list[str] = []
    sessions = state.get("sessions")
    if not isinstance(sessions, list):
        sessions = []
    good = [s for i, raw in enumerate(sessions) if (s := salvage.session(raw, i, problems))]
    registry.restore(good)
    return problems


def kept_aside(env: Mapping[str, str]) -> list[str]:
    """Damaged state files the daemon set aside at its starts, oldest first."""
    path = paths.daemon_state_file(env)
    folder, name = os.path.split(path)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(os.path.join(folder, n) for n in names if n.startswith(name + KEPT_INFIX))


class Restored(NamedTuple):
    """What ``restore_saved`` found besides the sessions."""

    #: None when the file was sound or absent, else one line for ``aipager status`` and
    #: ``doctor``: what was wrong, where the file was kept, how many sessions were restored
    problem: str | None
    #: the last journal frame the saved state includes (``journal``; 0: none, or unknown)
    journal_seq: int


def _journal_seq(data: bytes) -> int:
    try:
        seq = orjson.loads(data)["daemon"]["journal_seq"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return 0  # unknown: the whole journal is replayed
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and seq > 0 else 0


def restore_saved(env: Mapping[str, str], registry: Registry, *,
                  now: float | None = None) -> Restored:
    """At daemon start: load the saved sessions, keeping a damaged file aside.

    Every session record still usable is restored (``salvage``: a file cut
    short keeps the sessions written before the cut; bad fields are dropped,
    bad records skipped).  When anything was wrong the file is renamed to
    ``<file>.damaged-<UTC stamp>`` (the next save writes a sound one) and the
    problems are logged.
    """
    path = paths.daemon_state_file(env)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return Restored(None, 0)
    except OSError as exc:
        problem = f"{path}: cannot read the saved state ({exc.strerror}); starting without it"
        log.error("%s", problem)
        return Restored(problem, 0)
    sessions, seen, problems = salvage.sessions_of(data)
    registry.restore(sessions)
    seq = _journal_seq(data)
    if not problems:
        return Restored(None, seq)
    restored = len(registry.sessions)
    try:
        kept = keep_aside(path, time.time() if now is None else now)
    except OSError as exc:
        kept = f"(not kept: cannot rename it: {exc.strerror})"
    for line in problems[:salvage.PROBLEMS_LISTED]:
        log.error("saved state: %s", line)
    if len(problems) > salvage.PROBLEMS_LISTED:
        log.error("saved state: … %d more problem(s)", len(problems) - salvage.PROBLEMS_LISTED)
    more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
    summary = (f"the saved state was damaged ({problems[0]}{more}); kept as {kept}; "
               f"restored {restored} of {seen} session(s)")
    log.error("%s", summary)
    return Restored(summary, seq)
