"""`aipager config`: show and change the settings after setup.

A running daemon reads the config at start; changes apply at its next start.
"""

from __future__ import annotations

import os
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Mapping, Optional

import typer

from aipager import config
from aipager.proto import paths
from aipager.install import claude_code
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors, interactive, print_json
from aipager.cli.setup_cmd import read_token

app = typer.Typer(help="Show or change token, chat, members, policy file, claude_code.")
member_app = typer.Typer(help="Team members and their roles.")
app.add_typer(member_app, name="member")

_MEMBERS_LIVE = "A running daemon applies it from the next message on."
#: a path setting's way back to its default (the path argument is then omitted)
_Clear = Annotated[bool, typer.Option("--clear", help="Go back to the default; give no path then.")]
_RESTART = "Restart the daemon to apply (`aipager service stop && aipager service start`)."


@app.callback(invoke_without_command=True)
@handles_errors
def main(ctx: typer.Context) -> None:
    """Without a subcommand: show the configuration (token masked)."""
    if ctx.invoked_subcommand is None:
        show(as_json=False)


@app.command("show")
@handles_errors
def show(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Show the configuration; the token is masked."""
    env = _env()
    cfg = config.load(env)
    doc = cfg.to_json()
    doc["bot_token"] = config.mask_token(cfg.bot_token)
    doc["config_file"] = paths.config_file(env)
    if as_json:
        print_json(doc)
        return
    typer.echo(f"config file:  {doc['config_file']}")
    typer.echo(f"bot token:    {doc['bot_token']}")
    typer.echo(f"chat id:      {cfg.chat_id}")
    default_policy = f"(default: {paths.policy_user_file(env)})"
    typer.echo(f"policy file:  {cfg.policy_file or default_policy}")
    typer.echo(f"claude path:  {cfg.claude_path or '(claude on PATH)'}")
    typer.echo(f"private mode: {'on' if config.private(cfg) else 'off'}")
    typer.echo("members:" + ("" if cfg.members else "      (none)"))
    for m in cfg.members:
        typer.echo(f"  {m.id:<14} {m.role:<10} {m.label}")


@app.command("token")
@handles_errors
def token(
    token_file: Optional[Path] = typer.Option(
        None, "--token-file", help="Read it from a file ('-' = stdin)."),
) -> None:
    """Replace the bot token (checked with Telegram first; never taken as an argument)."""
    from aipager.install import telegram_check as tg

    env = _env()
    cfg = config.load(env)
    new = read_token(token_file, interactive())
    bot = tg.run(tg.check_token(new, tg.api_base(env)))
    tg.run(tg.check_chat(new, cfg.chat_id, tg.api_base(env)))
    config.save(env, replace(cfg, bot_token=new))
    typer.echo(f"Token saved for @{bot.username}. {_RESTART}")


@app.command("chat")
@handles_errors
def chat(chat_id: int = typer.Argument(..., help="Telegram chat id.")) -> None:
    """Report to another chat (a test message is sent there first)."""
    from aipager.install import telegram_check as tg

    env = _env()
    config.check_chat_id(chat_id)
    cfg = config.load(env)
    info = tg.run(tg.check_chat(cfg.bot_token, chat_id, tg.api_base(env)))
    config.save(env, replace(cfg, chat_id=info.id))
    typer.echo(f"Chat set to {info.title} ({info.id}). {_RESTART}")


@member_app.command("add")
@handles_errors
def member_add(
    user_id: int = typer.Argument(..., help="Telegram user id."),
    role: str = typer.Option("user", "--role", help=f"One of: {', '.join(config.ROLES)}, "
                             "or a role the policy file defines."),
    label: str = typer.Option("", "--label", help="A name to show for this person."),
) -> None:
    """Add a member, or change an existing member's role and label."""
    env = _env()
    config.check_user_id(user_id)
    cfg = config.load(env)
    member = config.Member(id=user_id, role=config.check_role(role, env), label=label)
    config.save(env, cfg.with_member(member))
    typer.echo(f"Member {user_id} is now {role}. {_MEMBERS_LIVE}")


@member_app.command("remove")
@handles_errors
def member_remove(user_id: int = typer.Argument(..., help="Telegram user id.")) -> None:
    """Remove a member."""
    env = _env()
    cfg = config.load(env)
    if all(m.id != user_id for m in cfg.members):
        typer.echo(f"No member {user_id}; nothing changed.")
        return
    config.save(env, cfg.without_member(user_id))
    typer.echo(f"Member {user_id} removed. {_MEMBERS_LIVE}")


@app.command("policy-file")
@handles_errors
def policy_file(path: Annotated[Optional[Path], typer.Argument(help="Policy JSON file.")] = None,
                clear: _Clear = False) -> None:
    """Use another policy file (the default is the config folder's policy.json)."""
    target, env = _set_path("policy_file", path, clear)
    if target is not None and not os.path.isfile(target):
        typer.echo(f"Note: {target} does not exist yet.")
    typer.echo(f"Policy file: {target or f'default ({paths.policy_user_file(env)})'}. {_RESTART}")


@app.command("claude-path")
@handles_errors
def claude_path(path: Annotated[Optional[Path], typer.Argument(help="The Claude Code program.")] = None,
                clear: _Clear = False) -> None:
    """Pin the Claude Code program sessions run."""
    typer.echo(f"Claude Code: {_set_path('claude_path', path, clear)[0] or 'claude on PATH'}.")


def _set_path(name: str, path: Optional[Path], clear: bool) -> tuple[str | None, Mapping[str, str]]:
    """Set the config's path setting ``name``: absolute, or None (its default) with --clear or
    no path. Returns the new value and the environment, for what to print."""
    target = None if clear or path is None else os.path.abspath(path)
    return target, _change(**{name: target})


def _change(**fields: Any) -> Mapping[str, str]:
    """Load the config, change ``fields``, save it; the environment, for what to print."""
    env = _env()
    config.save(env, replace(config.load(env), **fields))
    return env


class OnOff(str, Enum):
    on = "on"
    off = "off"


@app.command("raw-keys")
@handles_errors
def raw_keys(state: OnOff = typer.Argument(..., help="on or off.")) -> None:
    """Let the owner's chat messages be typed as keys (`!cmd`, Claude Code's own /commands).

    Off by default: then every message from the chat, the owner's too, goes in as a prompt.
    It never applies to other members.
    """
    env = _env()
    cfg = config.load(env)
    extra = {**cfg.extra, "owner_raw_keys": state is OnOff.on}
    config.save(env, replace(cfg, extra=extra))
    typer.echo("The owner's messages are typed as keys: !cmd and /commands act. " + _MEMBERS_LIVE
               if state is OnOff.on else "Every chat message goes in as a prompt. " + _MEMBERS_LIVE)


@app.command("private")
@handles_errors
def private(state: OnOff = typer.Argument(..., help="on or off.")) -> None:
    """Private mode: Telegram carries session names, states, counts and buttons only.

    What Claude writes, the commands it runs, paths, diffs, questions and files stay on
    your machine: they are read and answered on the web page (the Mini App over your own
    HTTPS, or the link `aipager page` prints). Nothing already sent is edited away.
    """
    env = _env()
    cfg = config.load(env)
    on = state is OnOff.on
    config.save(env, replace(cfg, extra={**cfg.extra, "private": on}))
    if not on:
        typer.echo("Private mode off: the chat shows answers, commands and diffs again. "
                   + _MEMBERS_LIVE)
        return
    typer.echo("Private mode on: Telegram gets session names, states and buttons; the "
               "content waits on the page. " + _MEMBERS_LIVE)
    typer.echo("Messages already in the chat stay as they are: nothing sent is edited away.")
    if not config.web_public_url(env, cfg):
        typer.echo("No web_public_url is set, so the chat cannot open the page: read it on "
                   "this computer (`aipager page` prints a link), or put HTTPS in front of it "
                   "and set web_public_url (README, \"The web page\").")


@app.command("rewire")
@handles_errors
def rewire() -> None:
    """Write aipager's entries into ~/.claude/settings.json again (idempotent)."""
    result = claude_code.install(_env())
    if not result.changed:
        typer.echo(f"Claude Code already wired: {result.path}")
        return
    typer.echo(f"Claude Code wired: {result.path}"
               + (f" (backup: {result.backup})" if result.backup else ""))
    for note in result.notes:
        typer.echo(f"Note: {note}")
