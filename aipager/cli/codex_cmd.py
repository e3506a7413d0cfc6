"""`aipager codex`: wire aipager into OpenAI's Codex CLI (``$CODEX_HOME/hooks.json``).

The same ``aipager-hook`` serves Claude Code and Codex; Codex runs a hook only once it is
trusted, so ``install`` also records each of aipager's hooks as trusted in Codex's
``config.toml`` (``aipager.install.codex``).
"""

from __future__ import annotations

import typer

from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors, print_problems, report_wiring
from aipager.install import codex

app = typer.Typer(help="Wire aipager into OpenAI Codex's hooks ($CODEX_HOME/hooks.json, "
                       "default ~/.codex).", no_args_is_help=True)


@app.command("install")
@handles_errors
def install() -> None:
    """Add aipager-hook for every Codex event and trust it in config.toml (idempotent;
    your hooks and settings stay)."""
    result = codex.install(_env())
    report_wiring(result, f"Wired aipager into {result.path}.",
            f"{result.path} already wires and trusts aipager; nothing written.")
    print_problems(codex.check(_env()))


@app.command("uninstall")
@handles_errors
def uninstall() -> None:
    """Remove exactly aipager's hooks and their trust entries (yours stay)."""
    result = codex.uninstall(_env())
    report_wiring(result, f"Removed aipager from {result.path}.",
            f"aipager is not wired in {result.path}; nothing written.")


@app.command("check")
@handles_errors
def check() -> None:
    """Report what is missing, stale or untrusted; exit 1 when the wiring is incomplete."""
    found = codex.check(_env())
    if not found:
        home = codex.codex_home(_env())
        typer.echo(f"Codex wiring OK ({home}/{codex.HOOKS_FILE}, trusted in "
                   f"{home}/{codex.CONFIG_FILE}).")
        return
    print_problems(found)
    raise typer.Exit(1)
