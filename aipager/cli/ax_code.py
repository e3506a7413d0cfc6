"""`aipager ax-code`: wire aipager into a project's AX Code hooks.

AX Code speaks Claude Code's hook protocol when an entry asks for it, so the
same ``aipager-hook`` serves both; only the file and its shape differ
(``aipager.install.ax_code``).
"""

from __future__ import annotations

from pathlib import Path

import typer

from aipager.proto import paths
from aipager.install import claude_code, ax_code
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors

app = typer.Typer(help="Wire aipager into AX Code's project hooks (.ax-code/hooks.json).",
                  no_args_is_help=True)

_PROJECT = typer.Option(Path("."), "--project", help="The project folder (default: here).",
                        file_okay=False)


def _report(result: claude_code.Result, changed: str, unchanged: str) -> None:
    typer.echo(changed if result.changed else unchanged)
    if result.backup:
        typer.echo(f"Backup: {result.backup}")
    for note in result.notes:
        typer.echo(note)


@app.command("install")
@handles_errors
def install(project: Path = _PROJECT) -> None:
    """Add aipager-hook for every AX Code event (idempotent; your hooks stay)."""
    result = ax_code.install(str(project), _env())
    _report(result, f"Wired aipager into {result.path}.",
            f"{result.path} already wires aipager; nothing written.")


@app.command("uninstall")
@handles_errors
def uninstall(project: Path = _PROJECT) -> None:
    """Remove exactly aipager's entries (your hooks stay)."""
    result = ax_code.uninstall(str(project))
    _report(result, f"Removed aipager from {result.path}.",
            f"aipager is not wired in {result.path}; nothing written.")


@app.command("check")
@handles_errors
def check(project: Path = _PROJECT) -> None:
    """Report what is missing; exit 1 when the wiring is incomplete."""
    found = ax_code.check(str(project), _env())
    if not found:
        typer.echo(f"AX Code wiring OK ({paths.ax_code_hooks(str(project))}).")
        typer.echo(ax_code.TRUST_REMINDER)
        return
    for problem in found:
        typer.echo(f"- {problem.what} -> {problem.fix}")
    raise typer.Exit(1)
