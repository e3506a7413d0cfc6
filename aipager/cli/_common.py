"""Helpers every command shares: the environment, error reporting, output."""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import Any, Callable, TypeVar

import typer

from aipager.proto.errors import AipagerError

F = TypeVar("F", bound=Callable[..., Any])

def env() -> dict[str, str]:
    """The environment commands read paths and settings from (a copy)."""
    return dict(os.environ)


def handles_errors(func: F) -> F:
    """Print an ``AipagerError`` as one line and exit with its ``exit_code``.

    No traceback: the message is written for a person.  Ctrl-C exits 130.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except AipagerError as exc:
            typer.echo(f"aipager: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("aipager: interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def interactive() -> bool:
    """Whether we may ask questions (stdin is a terminal)."""
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def print_json(doc: Any) -> None:
    typer.echo(json.dumps(doc, indent=2, sort_keys=True, default=str))


def report_wiring(result: Any, changed: str, unchanged: str) -> None:
    """What a wiring command did (``install.claude_code.Result``: Claude Code's, AX Code's,
    Codex's): which sentence, the backup it made, its notes."""
    typer.echo(changed if result.changed else unchanged)
    if result.backup:
        typer.echo(f"Backup: {result.backup}")
    for note in result.notes:
        typer.echo(note)


def print_problems(problems: Any) -> None:
    """A wiring check's problems, one a line with its fix."""
    for problem in problems:
        typer.echo(f"- {problem.what} -> {problem.fix}")
