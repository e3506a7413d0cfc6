"""`aipager policy`: see what the safety policy says before anyone relies on it.

``check`` validates the owner's policy file against the shipped schema and the
portable pattern dialect; ``explain`` decides one PreToolUse event for a role
with the same matcher the hook runs (``--engine python`` for the twin).
"""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from aipager.proto import paths
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors
from aipager.proto.errors import PolicyError, PolicySchemaError

if TYPE_CHECKING:
    from aipager.policy.model import Policy

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Check the safety policy and explain its decisions.")


class Engine(str, Enum):
    c = "c"
    python = "python"


def _problems(env: dict[str, str]) -> tuple[str, list[str], Policy | None]:
    """(path, problems, policy or None) for the owner's policy file."""
    from aipager.policy import model, validate

    path = paths.policy_user_file(env)
    try:
        text = Path(path).read_text("utf-8")
    except FileNotFoundError:
        return path, [], model.Policy()
    except OSError as exc:
        return path, [f"cannot read the file ({exc.strerror})"], None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return path, [f"not valid JSON ({exc})"], None
    found = validate.problems(doc)
    found += _glibc_problems(doc)
    if found:
        return path, found, None
    try:
        return path, [], model.from_document(doc, source=path)
    except PolicyError as exc:
        return path, [str(exc)], None


def _glibc_problems(doc) -> list[str]:
    """Patterns the hook's libc would refuse (belt and braces over the dialect)."""
    from aipager.policy import match

    if match._c is None or not isinstance(doc, dict):
        return []
    found = []
    roles = doc.get("roles")
    # the schema check has already named a "roles" that is not an object
    sections = [("floor", doc.get("floor"))] + [
        (f"roles.{name}", spec) for name, spec in (roles.items() if isinstance(roles, dict) else ())
    ]
    for place, spec in sections:
        items = spec.get("denied_commands") if isinstance(spec, dict) else None
        for i, item in enumerate(items if isinstance(items, list) else []):
            pattern = item.get("regex") if isinstance(item, dict) else item
            icase = bool(item.get("ignore_case")) if isinstance(item, dict) else False
            if isinstance(pattern, str) and not match._c.regex_compiles(pattern.encode(), icase):
                found.append(f"{place}.denied_commands[{i}]: glibc regcomp refuses {pattern!r}")
    return found


@app.command("check")
@handles_errors
def check(
    apply: bool = typer.Option(False, "--apply", help=(
        "Also publish the floor for the hook now (the running daemon does it by itself "
        "when the file changes; use this while it is down).")),
) -> None:
    """Validate the policy file; print each problem with its place."""
    env = _env()
    path, found, policy = _problems(env)
    if found:
        for line in found:
            typer.echo(f"{path}: {line}")
        if apply:
            typer.echo("nothing published: the floor published before stays in force")
        raise typer.Exit(PolicySchemaError.exit_code)
    assert policy is not None  # _problems gives the policy whenever it finds no problem
    if not os.path.exists(path):
        typer.echo(f"{path}: no policy file; the built-in roles and floor apply")
    else:
        extra = len(policy.floor_no_access) + len(policy.floor_no_write) + len(policy.floor_commands)
        typer.echo(f"{path}: OK ({len(policy.roles)} roles, {extra} additions to the floor)")
    if apply:
        _publish(env, policy)


def _publish(env: dict[str, str], policy: Policy) -> None:
    """Publish ``policy``'s effective floor where the hook reads it."""
    from aipager.cli._daemon import daemon_pids
    from aipager.policy import model

    try:
        where = model.publish(env, policy)
    except OSError as exc:
        msg = f"cannot publish the floor to {paths.floor_file(env)} ({exc.strerror or exc})"
        raise PolicyError(msg) from exc
    typer.echo(f"floor published for the hook: {where}")
    if daemon_pids(env):
        typer.echo("(the running daemon publishes it too whenever the policy file changes)")


def _read_event(source: str) -> dict:
    text = sys.stdin.read() if source == "-" else Path(source).read_text("utf-8")
    try:
        event = json.loads(text)
    except ValueError as exc:
        msg = f"{source}: not valid JSON ({exc})"
        raise PolicySchemaError(msg) from exc
    if not isinstance(event, dict):
        msg = f"{source}: the event must be a JSON object"
        raise PolicySchemaError(msg)
    return event


@app.command("explain")
@handles_errors
def explain(
    event_file: str = typer.Argument(..., metavar="EVENT.json", help="A PreToolUse event ('-' for stdin)."),
    role: str = typer.Option(..., "--role", help="Role of the person whose message started the task."),
    cwd: str = typer.Option(None, "--cwd", help="Working folder (default: the event's cwd)."),
    engine: Engine = typer.Option(None, "--engine", help="Matcher: c (as the hook) or python (the twin)."),
) -> None:
    """Print the decision the hook would take for this tool call."""
    from aipager.policy import _match_py, match, model, sendfile

    env = _env()
    policy = model.load_policy(env)
    the_role = policy.role(role)
    event = _read_event(event_file)
    if cwd:
        event["cwd"] = os.path.abspath(cwd)
    snap = model.task_snapshot(policy, role, env)
    use = (engine.value if engine else match.ENGINE)
    if use == "c" and match._c is None:
        msg = "the compiled matcher is not built here; use --engine python"
        raise PolicyError(msg)
    home = paths.home(env)
    try:
        decision, reason = match.decide(snap, event, home, engine=use)
    except _match_py.BadInput as exc:
        decision, reason = "deny", f"the check failed ({exc}); denied to be safe"
    if decision == "allow" and _match_py.ascii_lower(str(event.get("tool_name"))) == "senduserfile":
        refused = sendfile.check(event.get("tool_input"), event.get("cwd") or "", home, env,
                                 None if the_role.exempt else snap)
        if refused:
            decision, reason = "deny", sendfile.refusal_text(refused)
    typer.echo(json.dumps({"decision": decision, "reason": reason or None}))
