"""`aipager start`, `aipager uninstall` and `aipager service ...`."""

from __future__ import annotations

import logging
import os
import shutil
from typing import Any

import typer

from aipager import config, logsetup
from aipager.proto import paths, trust
from aipager.install import systemd, claude_code
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors, interactive
from aipager.cli import _daemon
from aipager.cli._daemon import ensure_folders, stop_daemon
from aipager.proto.errors import AipagerError, ConfigError

service_app = typer.Typer(help="The systemd user service that keeps the daemon running.")



def setup_logging(env: dict[str, str], verbose: bool) -> str:
    """Log to stderr and to ``paths.log_file``; return the log file path (``logsetup``)."""
    return logsetup.setup(env, verbose)


@handles_errors
def start(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
    no_web: bool = typer.Option(False, "--no-web", help="Do not serve the web page."),
    hub: bool = typer.Option(False, "--hub", help="Own the bot for several machines: run "
                             "the hub (and its nats-server) that hosts join."),
    join: str = typer.Option("", "--join", metavar="URL",
                             help="Join the hub at URL (nats://HUB:4222) instead of "
                             "running a chat; needs --creds."),
    creds: str = typer.Option("", "--creds", metavar="FILE",
                              help="The credential file `aipager hub invite` made."),
) -> None:
    """Run the daemon in the foreground, with the web page (and the Telegram chat once
    `aipager setup` connected one)."""
    env = _env()
    if join or creds:
        _start_joined(env, verbose, join, creds, hub)
        return
    cfg = config.load(env) if config.exists(env) else None  # a broken config stops here
    if cfg is None:
        if no_web or hub:
            msg = ("aipager is not set up for Telegram and --no-web leaves nothing to serve; "
                   "run `aipager setup` first") if no_web else (
                "a hub owns the Telegram bot: run `aipager setup` first")
            raise ConfigError(msg)
        # No Telegram yet: the page alone.  Claude Code is wired as `aipager setup` does.
        _wire_claude_code(env)
        typer.echo("Telegram is not set up yet: `aipager setup` connects it later.")
    ensure_folders(env)  # a read-only HOME or state folder stops here, in one line
    log_path = setup_logging(env, verbose)
    try:
        from aipager.main import run
    except ImportError as exc:
        msg = f"the daemon is not part of this build ({exc.name} missing)"
        raise AipagerError(msg) from exc
    logging.getLogger("aipager.cli").info("daemon starting; log file %s", log_path)
    if _daemon.EXEC:
        _become_daemon(verbose=verbose, hub=hub, web=not no_web)
    # only a hub passes its option (and the page's), and only --no-web the page's: a single
    # machine with its page calls ``run`` as before
    if hub:
        code = run(env, verbose=verbose, cfg=cfg, hub=True, web=not no_web)
    elif no_web:
        code = run(env, verbose=verbose, cfg=cfg, web=False)
    else:
        code = run(env, verbose=verbose, cfg=cfg)
    raise typer.Exit(code if isinstance(code, int) else 0)


def _become_daemon(**options: Any) -> None:
    """The program's ``start``: its process becomes the daemon's (``aipager.main.exec_daemon``),
    without the CLI's modules (typer's parameter coercion imports pydantic)."""
    from aipager.main import daemon_argv, exec_daemon

    exec_daemon(daemon_argv(**options))


def _wire_claude_code(env: dict[str, str]) -> None:
    """Wire Claude Code's settings.json (idempotent), saying so when something changed."""
    result = claude_code.install(env)
    if result.changed:
        typer.echo(f"Wired Claude Code: {result.path}"
                   + (f" (backup: {result.backup})" if result.backup else ""))
    for note in result.notes:
        typer.echo(f"Note: {note}")


def _start_joined(env: dict[str, str], verbose: bool, join: str, creds: str, hub: bool) -> None:
    """``start --join URL --creds FILE``: a host of a hub; no bot token, no config needed."""
    who, url = _joining(hub, join, creds)
    # a host never runs `aipager setup` (no bot): without the hooks nothing of its sessions
    # would reach the hub and the safety hook would not guard what the chat types there
    _wire_claude_code(env)
    ensure_folders(env)
    _record_join(env, url, creds)
    log_path = setup_logging(env, verbose)
    try:
        from aipager.main import run
    except ImportError as exc:
        msg = f"the daemon is not part of this build ({exc.name} missing)"
        raise AipagerError(msg) from exc
    logging.getLogger("aipager.cli").info("daemon starting as host %s of %s; log file %s",
                                          who.user, url, log_path)
    if _daemon.EXEC:
        _become_daemon(verbose=verbose, join=url, creds=creds)
    code = run(env, verbose=verbose, join=url, creds=creds)
    raise typer.Exit(code if isinstance(code, int) else 0)


@handles_errors
def uninstall(
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    purge: bool = typer.Option(False, "--purge", help="Also delete the config (token) and state."),
) -> None:
    """Remove aipager's entries from Claude Code's settings and stop the daemon.

    The audit log is always kept.  Running it twice changes nothing the second time.
    """
    env = _env()
    if not yes and interactive() and not typer.confirm(
        "Remove aipager's hooks from Claude Code and stop the daemon?"
    ):
        raise typer.Exit(1)
    result = claude_code.uninstall(env)
    if result.changed:
        typer.echo(f"Removed aipager's entries from {result.path} (backup: {result.backup})")
    else:
        typer.echo(f"No aipager entries in {result.path}")
    if systemd.installed(env):
        try:
            systemd.run(env, "uninstall")
            typer.echo("Service removed.")
        except AipagerError as exc:
            typer.echo(f"Warning: {exc}", err=True)
    if stop_daemon(env):
        typer.echo("Daemon stopped.")
    if purge:
        _purge(env)
    if os.path.exists(paths.audit_log(env)):
        typer.echo(f"Audit log kept: {paths.audit_log(env)}")


def _purge(env: dict[str, str]) -> None:
    audit = os.path.realpath(paths.audit_log(env))
    # the program itself, where scripts/install.sh puts it: not config or state
    venv = os.path.realpath(os.path.join(paths.data_dir(env), "venv"))
    for folder in (paths.config_dir(env), paths.state_dir(env), paths.data_dir(env)):
        if not os.path.isdir(folder):
            continue
        for entry in os.listdir(folder):
            target = os.path.join(folder, entry)
            if os.path.realpath(target) in (audit, venv):
                continue  # the audit log outlives aipager on purpose
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                os.unlink(target)
    # Events the hooks kept for a daemon that was down belong to this install:
    # without the folder a later hook (or reinstall) spools nothing.
    spool = paths.spool_dir(env)
    if os.path.isdir(spool) and trust.own_folder_finding(spool, "spool folder") is None:
        shutil.rmtree(spool, ignore_errors=True)  # ours only: never another user's folder
    typer.echo("Config and state removed.")


def _service(action: str, start_args: tuple[str, ...] = ()) -> None:
    env = _env()
    if action == "uninstall" and not systemd.installed(env):
        typer.echo("The service is not installed.")
        return
    outcomes = systemd.run(env, action, start_args)
    for outcome in outcomes:
        if outcome.output:
            typer.echo(outcome.output)
    if action == "install":
        typer.echo(f"Installed {systemd.unit_path(env)} and started it.")
    elif action == "status" and outcomes and outcomes[-1].returncode != 0:
        raise typer.Exit(outcomes[-1].returncode)


@service_app.command("install")
@handles_errors
def service_install(
    hub: bool = typer.Option(False, "--hub", help="The service runs the hub "
                             "(`aipager start --hub`)."),
    join: str = typer.Option("", "--join", metavar="URL",
                             help="The service joins the hub at URL (needs --creds)."),
    creds: str = typer.Option("", "--creds", metavar="FILE",
                              help="The credential file `aipager hub invite` made."),
) -> None:
    """Write the user unit, enable it and start it (as `aipager start` with these options)."""
    env = _env()
    args = _start_args(env, hub, join, creds)
    if join or creds:
        _wire_claude_code(env)  # as `start --join` does, before the unit runs it
    _service("install", args)


def _start_args(env: dict[str, str], hub: bool, join: str, creds: str) -> tuple[str, ...]:
    """``start``'s options for the unit, checked now as ``start`` would check them (a unit
    that fails at every restart helps no one); the credential file by absolute path."""
    if not (join or creds):
        if hub and not config.exists(env):
            msg = "a hub owns the Telegram bot: run `aipager setup` first"
            raise ConfigError(msg)
        return ("--hub",) if hub else ()
    _who, url = _joining(hub, join, creds)
    _record_join(env, url, creds)
    return ("--join", url, "--creds", os.path.abspath(creds))


def _record_join(env: dict[str, str], url: str, creds: str) -> None:
    """Keep the credential file's absolute path, for the floor (``creds.record_join``):
    from the daemon's first start on, no task but the owner's reads it."""
    from aipager.hub.creds import record_join

    try:
        record_join(env, url, creds)
    except OSError as exc:
        msg = (f"cannot record where the credential file is ({exc}); the safety floor "
               "would not keep other people's tasks from it")
        raise ConfigError(msg) from exc


def _joining(hub: bool, join: str, creds: str):  # -> tuple[Creds, str]
    """The credential and the hub's address for ``--join``/``--creds``, checked: a bad
    file, a missing address or a hub beyond loopback without TLS stop here, named."""
    from aipager.hub.conn import check_transport
    from aipager.hub.creds import read_creds

    if hub:
        msg = "--hub and --join exclude each other: a machine is the hub or joins one"
        raise ConfigError(msg)
    if not creds:
        msg = "--join needs --creds FILE (made by `aipager hub invite NAME` on the hub)"
        raise ConfigError(msg)
    who = read_creds(creds)
    url = join or who.url
    if not url:
        msg = "say which hub to join: --join nats://HUB:4222"
        raise ConfigError(msg)
    check_transport(url, who)  # no login or prompt in the clear
    return who, url


#: the service's plain subcommands (``install`` takes options, above): name, help
SERVICE_ACTIONS = (
    ("start", "Start the service."),
    ("stop", "Stop the service (running sessions keep running)."),
    ("status", "Show systemd's view of the service."),
    ("uninstall", "Stop and disable the service and delete the unit file."),
)


def _service_command(action: str, help_text: str) -> None:
    def command() -> None:
        _service(action)

    command.__name__ = f"service_{action}"
    command.__doc__ = help_text
    service_app.command(action)(handles_errors(command))


for _action, _help in SERVICE_ACTIONS:
    _service_command(_action, _help)
