"""Root of the `aipager` command: one sub-app or command module per noun.

Only typer and light aipager modules are imported here; aiogram and the
daemon are imported inside the commands that need them, so `aipager --help`
stays fast.
"""

from __future__ import annotations

import typer

from aipager import __version__
from aipager.cli import (
    ax_code,
    codex_cmd,
    config_cmd,
    doctor_cmd,
    hub_cmd,
    lifecycle,
    page_cmd,
    policy,
    session_cmd,
    setup_cmd,
    status_cmd,
    voice_cmd,
)

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  context_settings={"help_option_names": ["-h", "--help"]})


def _version(value: bool) -> None:
    if value:
        typer.echo(f"aipager {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
) -> None:
    """Telegram remote control for Claude Code."""


app.command("setup")(setup_cmd.setup)
app.add_typer(config_cmd.app, name="config")
app.command("start")(lifecycle.start)
app.command("uninstall")(lifecycle.uninstall)
app.add_typer(lifecycle.service_app, name="service")
app.command("status")(status_cmd.status)
app.command("page")(page_cmd.page)
app.command("doctor")(doctor_cmd.doctor)
app.add_typer(session_cmd.app, name="session")
app.command("send", cls=session_cmd.NameAfterDashes)(session_cmd.send)
app.add_typer(policy.app, name="policy")
app.add_typer(ax_code.app, name="ax-code")
app.add_typer(codex_cmd.app, name="codex")
app.add_typer(hub_cmd.app, name="hub")
app.add_typer(voice_cmd.app, name="voice")


def main() -> None:
    from aipager.cli import _daemon

    _daemon.EXEC = True  # the program: `start` becomes the daemon (``_daemon.EXEC``)
    app(prog_name="aipager")
