"""`aipager status`: the daemon and every session, readable when the daemon is down."""

from __future__ import annotations

import time
from typing import Any

import typer

from aipager import dtach
from aipager.proto import paths, trust
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors, print_json
from aipager.cli._daemon import daemon_pids
from aipager.cli.doctor_cmd import link_check
from aipager.cli.saved import load_state

#: a cost to a millionth of a dollar, as the daemon keeps it (``events.statusline``; not
#: imported: status stays light and works when the daemon's modules cannot load)
COST_PLACES = 6
#: session fields shown in the table, in order, when the state has them
_COLUMNS = ("state", "model", "context_pct", "cost_usd", "waiting_for")


def _cell(key: str, value: Any) -> str:
    """``key=value`` for the table; a cost in cents (``cost=$0.08``: the state keeps it to
    a millionth of a dollar, as ``--json`` gives it)."""
    if key == "cost_usd" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"cost=${value:.2f}"
    return f"{key}={value}"


def _state_problem(state: Any) -> str | None:
    """What is wrong with the saved state: unreadable now, or damaged at the daemon's start."""
    if not isinstance(state, dict):
        return None
    daemon = state.get("daemon")
    found = state.get("state_error") or (daemon.get("state_error") if isinstance(daemon, dict) else None)
    return found if isinstance(found, str) and found else None


def page_url(state: Any) -> str | None:
    """Where the running daemon's page listens, as its saved state says."""
    daemon = state.get("daemon") if isinstance(state, dict) else None
    web = daemon.get("web") if isinstance(daemon, dict) else None
    url = web.get("url") if isinstance(web, dict) else None
    return url if isinstance(url, str) and url else None


def _sessions_of(state: Any) -> list[dict[str, Any]]:
    sessions = state.get("sessions") if isinstance(state, dict) else None
    if isinstance(sessions, dict):
        return [{"name": k, **(v if isinstance(v, dict) else {})} for k, v in sessions.items()]
    if isinstance(sessions, list):
        return [s for s in sessions if isinstance(s, dict)]
    return []


@handles_errors
def status(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    show_all: bool = typer.Option(False, "--all", "-a", help="Include ended sessions."),
) -> None:
    """The daemon and every session: state, model, context %, cost, what it waits for."""
    env = _env()
    pids = sorted(daemon_pids(env))
    state, problem = load_state(env)
    problem = problem or _state_problem(state)
    sessions = dtach.list_sessions(env)
    terminals = [s.to_json() for s in sessions]
    # another user's private folder or socket at our names (issue 16): named as an attack
    unsafe = [str(f) for f in trust.findings(env)] + [s.problem for s in sessions if s.problem]
    if as_json:
        for sess in _sessions_of(state):
            cost = sess.get("cost_usd")
            if isinstance(cost, float):  # a state an older daemon saved: its float's noise
                sess["cost_usd"] = round(cost, COST_PLACES)
        print_json({
            "daemon": {"running": bool(pids), "pids": pids, "socket": paths.socket_path(env)},
            "state": state,
            "state_error": problem,
            "dtach_sessions": terminals,
            "unsafe_paths": unsafe,
        })
        return
    where = paths.socket_path(env)
    running = f"running (pid {', '.join(map(str, pids))})" if pids else "not running"
    typer.echo(f"daemon: {running}  [{where}]")
    for line in unsafe:
        typer.echo(f"WARNING: {line}")
    if problem:
        typer.echo(f"state: {problem}")
    facts = state.get("daemon") if isinstance(state, dict) else None
    if pids and isinstance(facts, dict) and facts.get("policy_error"):
        typer.echo(f"policy: {facts['policy_error']} (the floor published before stays in force)")
    url = page_url(state)
    if pids and url:
        typer.echo(f"page: {url}  (`aipager page` prints a sign-in link)")
    link = facts.get("hub_link") if pids and isinstance(facts, dict) else None
    if isinstance(link, dict):  # a host of a hub: its link, as doctor says it
        said = link_check(link, str(link.get("url") or "the hub"), time.time())
        typer.echo(f"hub: {said.detail} (as {link.get('host')})")
    chat = ((state or {}).get("daemon") or {}).get("chat") if isinstance(state, dict) else None
    if pids and isinstance(chat, dict):
        typer.echo(f"chat: {chat.get('chat_id')} via @{chat.get('bot') or '?'} · Telegram "
                   f"{chat.get('telegram')} · {chat.get('unsent', 0)} unsent")
    rows = [r for r in _sessions_of(state) if show_all or r.get("state") != "gone"]
    live = {s.session: s.live for s in sessions}
    if not rows and not terminals:
        typer.echo("no sessions")
        return
    for row in rows:
        name = str(row.get("name") or row.get("session") or "?")
        cells = [_cell(key, row[key]) for key in _COLUMNS if row.get(key) not in (None, "")]
        terminal = live.pop(name, live.pop(paths.SESSION_PREFIX + name, None))
        cells.append("terminal=" + {True: "live", False: "stale", None: "none"}[terminal])
        typer.echo(f"  {row.get('label') or name:<20} " + "  ".join(cells))
        if row.get("status_file_error"):
            typer.echo(f"  {'':<20} ! {row['status_file_error']}: no token counts in its events")
    for name, is_live in sorted(live.items()):
        typer.echo(f"  {name:<20} terminal={'live' if is_live else 'stale'}")
