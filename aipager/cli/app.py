"""Root of the `aipager` command (placeholder until the CLI issue lands)."""

from __future__ import annotations

import typer

from aipager import __version__

app = typer.Typer(no_args_is_help=True, add_completion=False)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"aipager {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True),
) -> None:
    """Telegram remote control for Claude Code."""


def main() -> None:
    app()
