"""`aipager setup`: token, chat, config file and Claude Code wiring in one go.

Interactive when stdin is a terminal; otherwise fully scriptable:
``aipager setup --token-file F --chat-id N --yes`` or the token on stdin.  The
token is never accepted as an argument (it would land in shell history and
``ps``), never echoed and never logged.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Optional

import typer

from aipager import agents, claudefiles, config
from aipager.proto import paths
from aipager.install import claude_code, codex
from aipager.cli._common import env as _env
from aipager.cli._daemon import daemon_pids
from aipager.cli._common import handles_errors, interactive, report_wiring
from aipager.proto.errors import (AipagerError, ChatUnreachable, ConfigError, SessionError,
                                  TokenRejected)


#: the most read from a token file or stdin: a bot token is under 100 bytes,
#: and ``--token-file /dev/zero`` must not read until memory runs out
TOKEN_READ_MAX = 4096


def read_token(token_file: Path | None, ask: bool) -> str:
    """The token from ``token_file`` ("-" = stdin), a hidden prompt, or stdin.

    At most ``TOKEN_READ_MAX`` bytes are read from a file (stdin: one line).

    Raises:
        TokenRejected: empty, longer than ``TOKEN_READ_MAX``, or not shaped
            like a bot token.
        ConfigError: the file cannot be read.
    """
    if token_file is not None and str(token_file) != "-":
        try:
            with open(token_file, "rb") as fh:
                data = fh.read(TOKEN_READ_MAX + 1)
        except OSError as exc:
            msg = f"cannot read the token file {token_file}: {exc.strerror}"
            raise ConfigError(msg) from exc
        too_long, where = len(data) > TOKEN_READ_MAX, f"the token file {token_file}"
        raw = data.decode("utf-8", errors="replace")
    elif ask and token_file is None:
        raw = typer.prompt("Bot token (from @BotFather; input hidden)", hide_input=True)
        too_long, where = False, ""
    else:
        raw = sys.stdin.readline(TOKEN_READ_MAX + 1)
        too_long, where = len(raw) > TOKEN_READ_MAX, "the token's line on stdin"
    if too_long:
        msg = (f"{where} is longer than {TOKEN_READ_MAX} bytes, and a bot token is under 100: "
               "give a file (or stdin) holding only the token")
        raise TokenRejected(msg)
    try:
        return config.check_token_shape(raw)
    except ConfigError as exc:
        raise TokenRejected(str(exc)) from None


def run_setup(
    env: Mapping[str, str],
    token_file: Path | None = None,
    chat_id: int | None = None,
    yes: bool = False,
    wait: float = 120.0,
    ask: bool | None = None,
    owner_id: int | None = None,
) -> config.Config:
    """The whole setup; returns the saved config.  ``ask`` None = ask if on a terminal.

    ``owner_id``: with a group chat, the Telegram user who owns it in aipager.
    """
    from aipager.install import telegram_check as tg

    ask = interactive() if ask is None else ask
    # Ids Telegram cannot have are refused before anything is read or sent.
    if chat_id is not None:
        config.check_chat_id(chat_id)
    if owner_id is not None:
        config.check_user_id(owner_id)
    previous = _previous(env)
    # only the chat changes (``--chat-id`` with no token file): the bot's token stays
    chat_only = previous is not None and chat_id is not None and token_file is None
    if previous is not None and not yes:
        what = "chat" if chat_only else "token and chat"
        if not ask:
            msg = f"aipager is already set up; pass --yes to replace the {what}"
            raise ConfigError(msg)
        if not typer.confirm(f"aipager is already set up. Replace the {what}?"):
            raise typer.Exit(0)

    # Fail before anything is written if Claude Code cannot be wired: an
    # unreadable settings.json or a missing hook program.
    claudefiles.read_settings(paths.claude_settings(env))
    claude_code.find_binaries(env)

    base = tg.api_base(env)
    if chat_only and previous is not None:
        token = previous.bot_token
        typer.echo("Keeping the bot token of the current setup.")
    else:
        # Even with --yes a terminal gets a hidden prompt, never an echoed read.
        token = read_token(token_file, ask or interactive())
    bot = tg.run(tg.check_token(token, base))
    typer.echo(f"Bot: @{bot.username} ({bot.name})")

    if chat_id is None and ask:
        answer = typer.prompt("Your chat id (leave empty to detect it)", default="",
                              show_default=False)
        chat_id = int(answer) if answer.strip().lstrip("-").isdigit() else None
        if chat_id is not None:
            config.check_chat_id(chat_id)
    if chat_id is None:
        typer.echo(f"Send any message to @{bot.username} in Telegram; "
                   f"waiting up to {wait:.0f} s…")
        found = tg.run(tg.detect_chat(token, base, wait=wait))
        if found is None:
            msg = (f"no message reached @{bot.username} within {wait:.0f} s; "
                   "send it a message, or pass --chat-id")
            raise ChatUnreachable(msg)
        chat_id = found.id
    chat = tg.run(tg.check_chat(token, chat_id, base))
    typer.echo(f"Chat: {chat.title} ({chat.id}); a test message was sent there.")

    cfg = config.Config(bot_token=token, chat_id=chat.id)
    if previous is not None:
        cfg = replace(previous, bot_token=token, chat_id=chat.id)
    if chat.kind == "private":
        cfg = cfg.with_member(config.Member(id=chat.id, role="owner", label=chat.title))
    else:
        cfg = _group_owner(cfg, owner_id, ask)
        reads, how = tg.run(tg.group_access(token, chat.id, base))
        if reads:
            typer.echo(f"The bot reads the group's messages ({how}).")
        else:
            typer.echo("Warning: the bot sees only commands and replies to it in this group "
                       f"(Telegram privacy mode). To fix: {tg.GROUP_FIX}.", err=True)
    path = config.save(env, cfg)
    typer.echo(f"Config written to {path} (owner-only).")

    result = claude_code.install(env)
    if result.changed:
        typer.echo(f"Claude Code wired: {result.path}"
                   + (f" (backup: {result.backup})" if result.backup else ""))
    else:
        typer.echo(f"Claude Code already wired: {result.path}")
    for note in result.notes:
        typer.echo(f"Note: {note}")
    _wire_codex(env)
    return cfg


def _wire_codex(env: Mapping[str, str]) -> None:
    """Codex on this computer: wired as well (its hooks trusted the way Codex records
    trust), so a session started with ``--agent codex`` reports as Claude Code's do.  A
    Codex file aipager cannot edit stops nothing here: it is said, with what to run."""
    try:
        agents.CODEX.binary(env)
    except SessionError:
        return  # no Codex here: nothing to wire
    try:
        result = codex.install(env)
    except AipagerError as exc:
        typer.echo(f"Codex found, not wired: {exc} (fix it, then run `aipager codex "
                   "install`).", err=True)
        return
    report_wiring(result, f"Codex found and wired: {result.path} (`aipager codex uninstall` "
                  "undoes it).", f"Codex already wired: {result.path}")


def _group_owner(cfg: config.Config, owner_id: int | None, ask: bool) -> config.Config:
    """A group needs an owner member: nobody could approve or manage otherwise."""
    if owner_id is None and ask:
        answer = typer.prompt("Your Telegram user id (the group's owner in aipager)",
                              default="", show_default=False)
        owner_id = int(answer) if answer.strip().isdigit() else None
        if owner_id is not None:
            config.check_user_id(owner_id)
    if owner_id is None:
        if not any(m.role == "owner" for m in cfg.members):
            typer.echo("Warning: no owner yet; add yourself with "
                       "`aipager config member add <your user id> --role owner`.", err=True)
        return cfg
    return cfg.with_member(config.Member(id=owner_id, role="owner", label="owner"))


def _previous(env: Mapping[str, str]) -> config.Config | None:
    if not config.exists(env):
        return None
    try:
        return config.load(env)
    except ConfigError:
        return None  # a broken file is simply replaced by setup


@handles_errors
def setup(
    token_file: Optional[Path] = typer.Option(
        None, "--token-file", help="Read the bot token from this file ('-' = stdin)."),
    chat_id: Optional[int] = typer.Option(
        None, "--chat-id", help="Telegram chat id to report to: your private chat (detected "
        "when omitted) or a group (negative id)."),
    owner_id: Optional[int] = typer.Option(
        None, "--owner-id", help="With a group: your Telegram user id (becomes its owner)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Replace an existing setup, ask nothing."),
    wait: float = typer.Option(
        120.0, "--wait", help="Seconds to wait for a message when detecting the chat."),
) -> None:
    """First-time setup: check the bot token and chat, save the config, wire Claude Code.

    Without --token-file the token is read from a hidden prompt (terminal) or
    from stdin (scripts).  It is never taken as an argument.
    """
    env = _env()
    before = _previous(env)
    cfg = run_setup(env, token_file=token_file, chat_id=chat_id, yes=yes, wait=wait,
                    ask=interactive() and not yes, owner_id=owner_id)
    typer.echo(next_step(before, cfg, running=bool(daemon_pids(env))))


def next_step(before: config.Config | None, after: config.Config, running: bool) -> str:
    """What to do after setup.  The README's order is start, then setup: a daemon that runs
    without a config starts the chat itself when the config appears (``main``), and one that
    runs with a chat reads the chat and members again, but not the bot token."""
    if not running:
        return "Done. Run `aipager start` (or `aipager service install`) to start the daemon."
    if before is None:
        return "Done. The running daemon starts the chat within a few seconds: write to your bot."
    if before.bot_token != after.bot_token:
        return ("Done. The running daemon still uses the previous bot: stop it (Ctrl-C where "
                "it runs, or `aipager service stop`) and start it again.")
    return "Done. The running daemon uses the new chat and members from now on."
