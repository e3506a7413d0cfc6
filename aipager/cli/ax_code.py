"""`aipager ax-code`: wire aipager into a project's AX Code hooks.

The same ``aipager-hook`` serves Claude Code and both of AX Code's hook forms;
only the file and its shape differ, and ``install`` asks the installed AX Code
which shape it reads (``aipager.install.ax_code``).
"""

from __future__ import annotations

from pathlib import Path

import typer

from aipager.proto import paths
from aipager.install import ax_code
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors, print_problems, report_wiring

app = typer.Typer(help="Wire aipager into AX Code's project hooks (.ax-code/hooks.json).",
                  no_args_is_help=True)

_PROJECT = typer.Option(Path("."), "--project", help="The project folder (default: here).",
                        file_okay=False)
def _known_form(value: str) -> str:
    if value not in ("auto",) + ax_code.FORMS:
        raise typer.BadParameter(f"use auto, {', '.join(ax_code.FORMS)}")
    return value


_FORM = typer.Option("auto", "--form", callback=_known_form,
                     help="The hook form: legacy (AX Code before 7.24.4), protocol (7.24.4 and "
                          "later), or auto: ask `ax-code --version` (legacy when none answers).")
_FORCE = typer.Option(False, "--force",
                      help="Write --form even when the installed AX Code does not read it "
                           "(every hook then stays off until AX Code is upgraded).")
_AX_CODE = typer.Option(None, "--ax-code", help="The AX Code program to ask (default: ax-code on PATH).",
                        dir_okay=False)


def _form(form: str) -> str | None:
    return None if form == "auto" else form


def _program(program: Path | None) -> str | None:
    return str(program) if program is not None else None


@app.command("install")
@handles_errors
def install(project: Path = _PROJECT, form: str = _FORM, ax_code_program: Path | None = _AX_CODE,
            force: bool = _FORCE) -> None:
    """Add aipager-hook for every AX Code event (idempotent; your hooks stay), in the form
    the installed AX Code reads; then check the wiring as `check` does."""
    result = ax_code.install(str(project), _env(), form=_form(form),
                             program=_program(ax_code_program), force=force)
    report_wiring(result, f"Wired aipager into {result.path}.",
            f"{result.path} already wires aipager; nothing written.")
    # what the installed AX Code will make of it (a forced form it cannot read, say so)
    print_problems(ax_code.check(str(project), _env(), program=_program(ax_code_program)))


@app.command("uninstall")
@handles_errors
def uninstall(project: Path = _PROJECT) -> None:
    """Remove exactly aipager's entries (your hooks stay)."""
    result = ax_code.uninstall(str(project))
    report_wiring(result, f"Removed aipager from {result.path}.",
            f"aipager is not wired in {result.path}; nothing written.")


@app.command("check")
@handles_errors
def check(project: Path = _PROJECT, form: str = _FORM, ax_code_program: Path | None = _AX_CODE) -> None:
    """Report what is missing; exit 1 when the wiring is incomplete."""
    found = ax_code.check(str(project), _env(), form=_form(form), program=_program(ax_code_program))
    if not found:
        typer.echo(f"AX Code wiring OK ({paths.ax_code_hooks(str(project))}).")
        typer.echo(ax_code.TRUST_REMINDER)
        return
    print_problems(found)
    raise typer.Exit(1)
