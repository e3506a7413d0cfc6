"""`aipager session NAME [-- claude args]`, `session list`, `session kill`, `send`.

``session NAME`` creates the dtach session ``claude-NAME`` (Claude Code in the
current folder) or reattaches to it when it is live.  ``list`` and ``kill``
are subcommands, so they cannot be session names here.

New names may not start with ``-``; a session an older version named so is
still listed, attached to and ended, its name after ``--``
(``aipager session kill -- -rf``).
"""

from __future__ import annotations

import os
import sys
from typing import Any, List, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from aipager import agents, dtach
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors, interactive, print_json
from aipager.proto.errors import SessionNotFound


class _NameOrCommand(TyperGroup):
    """``session x1`` means ``session open x1``; ``session list`` is a command
    (``session -- -rf`` opens the older session ``-rf``)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["open", *args]
        return super().parse_args(ctx, args)


class NameAfterDashes(TyperCommand):
    """An unknown option may be an older session's name ("-rf"): say where names go."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:
            # click's NoSuchOption; matched by its attributes because typer
            # versions differ in whether they bundle their own click
            if isinstance(getattr(exc, "option_name", None), str) and hasattr(exc, "message"):
                exc.message = (f"{exc.message}; a session name that starts with '-' "
                               f"goes after --: {ctx.command_path} -- NAME")
            raise


app = typer.Typer(
    cls=_NameOrCommand, no_args_is_help=True,
    help="Claude Code sessions in dtach.  `aipager session NAME [--detached] [-- claude args…]` "
    "creates session NAME in the current folder, or reattaches when it runs (detach: Ctrl-\\).",
)


@app.command("open", hidden=True,
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@handles_errors
def open_(
    name: str = typer.Argument(
        ..., help="Session name: letters, digits, '-', '_' (not starting with '-')."),
    claude_args: Optional[List[str]] = typer.Argument(
        None, help="Passed to Claude Code (after --)."),
    detached: bool = typer.Option(False, "--detached", "-d", help="Create without attaching."),
    agent: str = typer.Option("claude", "--agent", help="The coding agent it runs: "
                              + ", ".join(agents.AGENTS) + "."),
) -> None:
    """Create session NAME running Claude Code (or ``--agent``) here, or reattach (detach:
    Ctrl-\\)."""
    env = _env()
    try:
        runs = agents.get(agent)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--agent") from None
    # an older session named "-rf" may still be attached to; create() refuses the name
    bare = dtach.existing_name(name)
    sock = dtach.paths.dtach_socket(env, bare)
    if dtach.is_live(sock):
        if claude_args:
            typer.echo(f"Session {bare} is already running; "
                       "the Claude Code arguments were not used.", err=True)
        if detached:
            typer.echo(f"Session {bare} is already running ({sock}).")
            return
    else:
        dtach.create(env, bare, args=claude_args or (), agent=runs)
        typer.echo(f"Started session {bare} in {os.getcwd()}"
                   + (f"; attach with `aipager session {bare}`." if detached else "."))
        if detached:
            return
    if not interactive():
        typer.echo(f"Not attaching: stdin is not a terminal. Attach with `aipager session {bare}`.",
                   err=True)
        return
    typer.echo("Detach with Ctrl-\\ (the session keeps running).")
    raise typer.Exit(dtach.attach(env, bare))


@app.command("list")
@handles_errors
def list_(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Sessions with a dtach socket; stale sockets (nobody answers) are removed."""
    env = _env()
    found = dtach.list_sessions(env)
    refused = [s for s in found if s.problem]
    stale = [s for s in found if not s.live and not s.problem]
    for s in stale:
        dtach.kill(env, s.name)  # a stale socket: kill just unlinks it
    live = [s for s in found if s.live]
    if as_json:
        doc: dict[str, Any] = {"sessions": [s.to_json() for s in live],
                               "stale_removed": [s.name for s in stale]}
        if refused:
            doc["refused"] = [s.to_json() for s in refused]
        print_json(doc)
        return
    for s in refused:
        typer.echo(f"aipager: {s.problem}", err=True)
    for s in stale:
        typer.echo(f"removed stale socket of {s.name}", err=True)
    if not live:
        typer.echo("no sessions")
    for s in live:
        typer.echo(f"{s.name:<24} {s.session:<32} {s.socket}")


@app.command("kill", cls=NameAfterDashes)
@handles_errors
def kill(
    name: str = typer.Argument(
        ..., help="Session name; one that starts with '-' goes after --: kill -- -rf."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """End session NAME (Claude Code and what it started)."""
    env = _env()
    bare = dtach.existing_name(name)
    if not yes and interactive() and not typer.confirm(f"End session {bare}?"):
        raise typer.Exit(1)
    if dtach.kill(env, bare):
        typer.echo(f"Session {bare} ended.")
    else:
        typer.echo(f"No running session {bare}.")
        raise typer.Exit(SessionNotFound.exit_code)


@handles_errors
def send(
    name: str = typer.Argument(
        ..., help="Session name; one that starts with '-' goes after --: send -- -rf TEXT."),
    text: str = typer.Argument(..., help="The prompt ('-' reads it from stdin)."),
) -> None:
    """Type TEXT into session NAME and press Enter, as if typed at its terminal."""
    if text == "-":
        text = sys.stdin.read().rstrip("\n")
    dtach.type_text(_env(), name, text)
    typer.echo(f"Sent to {dtach.existing_name(name)}.")
