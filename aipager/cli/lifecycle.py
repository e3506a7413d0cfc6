"""`aipager start`, `aipager uninstall` and `aipager service ...`."""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys

import typer

from aipager import config, paths, service, wiring
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors, interactive
from aipager.cli._daemon import stop_daemon
from aipager.errors import AipagerError, ConfigError

service_app = typer.Typer(help="The systemd user service that keeps the daemon running.")

_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RedactTokens(logging.Filter):
    """Masks anything shaped like a bot token in a log record.

    A safety net: aipager never logs the token, but a library's error text
    might carry a request URL (``/bot<token>/getMe``).
    """

    _TOKEN = re.compile(r"(?<!\d)(\d{3,}):[A-Za-z0-9_-]{20,}")

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        redacted = self._TOKEN.sub(lambda m: f"{m.group(1)}:***", text)
        if redacted != text:
            record.msg, record.args = redacted, None
        return True


def setup_logging(env: dict[str, str], verbose: bool) -> str:
    """Log to stderr and to ``paths.log_file``; return the log file path.

    Calling it again replaces the handlers it added before.
    """
    path = paths.log_file(env)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for old in [h for h in root.handlers if getattr(h, "_aipager", False)]:
        root.removeHandler(old)
        old.close()
    formatter = logging.Formatter(_LOG_FORMAT)
    for handler in (logging.StreamHandler(sys.stderr), logging.FileHandler(path, encoding="utf-8")):
        handler.setFormatter(formatter)
        handler.addFilter(RedactTokens())
        handler._aipager = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    if not verbose:
        # aiohttp/aiogram chatter (every poll) only with --verbose.
        logging.getLogger("aiogram").setLevel(logging.WARNING)
    return path


@handles_errors
def start(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
) -> None:
    """Run the daemon in the foreground (runs setup first on an unconfigured machine)."""
    env = _env()
    if not config.exists(env):
        if not interactive():
            msg = "aipager is not set up yet; run `aipager setup` first"
            raise ConfigError(msg)
        typer.echo("aipager is not set up yet; let's do that first.")
        from aipager.cli.setup_cmd import run_setup

        run_setup(env, ask=True)
    cfg = config.load(env)  # a broken config stops here, with the file named
    log_path = setup_logging(env, verbose)
    try:
        from aipager.daemon.app import run_daemon
    except ImportError as exc:
        msg = f"the daemon is not part of this build ({exc.name} missing)"
        raise AipagerError(msg) from exc
    logging.getLogger("aipager.cli").info("daemon starting; log file %s", log_path)
    code = run_daemon(env, verbose=verbose, cfg=cfg)
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
    result = wiring.uninstall(env)
    if result.changed:
        typer.echo(f"Removed aipager's entries from {result.path} (backup: {result.backup})")
    else:
        typer.echo(f"No aipager entries in {result.path}")
    if service.installed(env):
        try:
            service.run(env, "uninstall")
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
    for folder in (paths.config_dir(env), paths.state_dir(env), paths.data_dir(env)):
        if not os.path.isdir(folder):
            continue
        for entry in os.listdir(folder):
            target = os.path.join(folder, entry)
            if os.path.realpath(target) == audit:
                continue  # the audit log outlives aipager on purpose
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                os.unlink(target)
    # Events the hooks kept for a daemon that was down belong to this install:
    # without the folder a later hook (or reinstall) spools nothing.
    spool = paths.spool_dir(env)
    if os.path.isdir(spool) and not os.path.islink(spool):
        shutil.rmtree(spool, ignore_errors=True)
    typer.echo("Config and state removed.")


def _service(action: str) -> None:
    env = _env()
    if action == "uninstall" and not service.installed(env):
        typer.echo("The service is not installed.")
        return
    outcomes = service.run(env, action)
    for outcome in outcomes:
        if outcome.output:
            typer.echo(outcome.output)
    if action == "install":
        typer.echo(f"Installed {service.unit_path(env)} and started it.")
    elif action == "status" and outcomes and outcomes[-1].returncode != 0:
        raise typer.Exit(outcomes[-1].returncode)


@service_app.command("install")
@handles_errors
def service_install() -> None:
    """Write the user unit, enable it and start it."""
    _service("install")


@service_app.command("start")
@handles_errors
def service_start() -> None:
    """Start the service."""
    _service("start")


@service_app.command("stop")
@handles_errors
def service_stop() -> None:
    """Stop the service (running sessions keep running)."""
    _service("stop")


@service_app.command("status")
@handles_errors
def service_status() -> None:
    """Show systemd's view of the service."""
    _service("status")


@service_app.command("uninstall")
@handles_errors
def service_uninstall() -> None:
    """Stop and disable the service and delete the unit file."""
    _service("uninstall")
