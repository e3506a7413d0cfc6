"""`aipager doctor`: every check, and a fix printed for each problem."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from typing import Any, Callable

import typer

from aipager import config, dtach
from aipager.proto import paths, trust
from aipager import claudefiles
from aipager.install import claude_code
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors, print_json
from aipager.cli._daemon import daemon_pids
from aipager.cli.saved import load_state
from aipager.proto.errors import AipagerError

#: Linux's sun_path limit, including the terminating NUL
_SUN_PATH_MAX = 108


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


#: what doctor says of a machine without a config: aipager runs with its page alone
PAGE_ONLY = ("not set up (page only): `aipager start` serves the page; `aipager setup` "
             "connects a Telegram chat whenever you like")


def _config(env: dict[str, str]) -> tuple[Check, config.Config | None]:
    """The config file.  None there is no problem: the daemon runs with its page alone
    (``aipager start`` before ``aipager setup``); a file that is there must be valid."""
    if not config.exists(env):
        return Check("telegram", True, PAGE_ONLY), None
    try:
        cfg = config.load(env)
    except AipagerError as exc:
        return Check("config", False, str(exc), "run `aipager setup`"), None
    return Check("config", True, paths.config_file(env)), cfg


def _telegram(env: dict[str, str], cfg: config.Config) -> list[Check]:
    from aipager.install import telegram_check as tg

    base = tg.api_base(env)
    try:
        bot = tg.run(tg.check_token(cfg.bot_token, base))
    except AipagerError as exc:
        return [Check("token", False, str(exc), "run `aipager config token`")]
    checks = [Check("token", True, f"@{bot.username}")]
    try:
        chat = tg.run(tg.check_chat(cfg.bot_token, cfg.chat_id, base, send_test=False))
        checks.append(Check("chat", True, f"{chat.title} ({chat.id})"))
    except AipagerError as exc:
        checks.append(Check("chat", False, str(exc), "run `aipager config chat <id>`"))
        return checks
    if chat.kind != "private":
        checks.append(_group(cfg, base))
    return checks


def _group(cfg: config.Config, base: str | None) -> Check:
    from aipager.install import telegram_check as tg

    try:
        reads, how = tg.run(tg.group_access(cfg.bot_token, cfg.chat_id, base))
    except AipagerError as exc:
        return Check("group", False, str(exc), "run `aipager config chat <id>`")
    if not reads:
        return Check("group", False, "the bot sees only commands and replies to it in the "
                     "group (privacy mode)", tg.GROUP_FIX)
    owners = [m for m in cfg.members if m.role == "owner"]
    if not owners:
        return Check("group", False, "no member has the owner role, so nobody may approve "
                     "or manage", "run `aipager config member add <your id> --role owner`")
    return Check("group", True, f"reads the group's messages ({how}); "
                 f"{len(cfg.members)} member(s)")


def _program(name: str, find: Callable[[], str], fix: str) -> Check:
    try:
        path = find()
    except AipagerError as exc:
        return Check(name, False, str(exc), fix)
    if not os.access(path, os.X_OK):
        return Check(name, False, f"{path} is not executable", fix)
    return Check(name, True, path)


def _hooks(env: dict[str, str]) -> list[Check]:
    fix_native = ("reinstall aipager where a C compiler is available "
                  "(pip install --force-reinstall aipager)")
    try:
        bins = claude_code.find_binaries(env)
    except AipagerError as exc:
        return [Check("hook binaries", False, str(exc), "reinstall aipager")]
    checks = []
    for path in (bins.hook, bins.statusline):
        if claudefiles.is_native(path):
            checks.append(Check("hook binaries", True, f"{path} (native)"))
        else:
            what = (f"{path} is not the native build "
                    "(a script: every hook event costs a Python start)")
            checks.append(Check("hook binaries", False, what, fix_native))
    return checks


def _wiring(env: dict[str, str]) -> list[Check]:
    problems = claude_code.check(env)
    if not problems:
        return [Check("settings.json", True, paths.claude_settings(env))]
    return [Check("settings.json", False, p.what, p.fix) for p in problems]


def _codex_wired(hooks: str) -> bool:
    """Whether Codex's hooks.json names aipager-hook (``aipager codex install`` ran)."""
    from aipager.install import codex

    try:
        return bool(codex.our_handlers(claudefiles.read_settings(hooks)))
    except AipagerError:
        return True  # unreadable: the check says how, as `aipager codex check` does


def _codex(env: dict[str, str]) -> list[Check]:
    """Codex's wiring, as `aipager codex check` sees it, when Codex is in use here: its
    program is found or `aipager codex install` wired it.  Codex is optional: without it
    nothing is said."""
    from aipager import agents
    from aipager.install import codex

    home = codex.codex_home(env)
    try:
        program: str | None = agents.get("codex").binary(env)
    except AipagerError:
        program = None
    if program is None and not _codex_wired(os.path.join(home, codex.HOOKS_FILE)):
        return []
    found = codex.check(env)
    if not found:
        return [Check("codex", True, f"wired and trusted in {home}")]
    fix = found[0].fix
    if all(p.what.endswith("aipager-hook is not wired") for p in found):
        return [Check("codex", False, f"Codex ({program}) is installed but aipager is not "
                      f"wired into it ({home}/{codex.HOOKS_FILE}): its sessions would not "
                      "reach the chat nor meet the safety floor", fix)]
    more = f" (and {len(found) - 1} more: `aipager codex check`)" if len(found) > 1 else ""
    return [Check("codex", False, found[0].what + more, fix)]


def _socket(env: dict[str, str]) -> Check:
    sock = paths.socket_path(env)
    folder = os.path.dirname(sock) or "."
    # another user's private folder or socket at our names: an attack, named first
    unsafe = trust.findings(env)
    if unsafe:
        return Check("socket", False, unsafe[0].what, unsafe[0].fix)
    if len(sock.encode()) >= _SUN_PATH_MAX:
        return Check("socket", False, f"{sock} is longer than a Unix socket path may be",
                     "set AIPAGER_SOCKET_PATH or XDG_RUNTIME_DIR to a shorter folder")
    # a private folder not made yet is made 0700 where it would go
    probe = folder if os.path.lexists(folder) or folder != paths.private_dir() else "/tmp"
    if not os.access(probe, os.W_OK | os.X_OK):
        return Check("socket", False, f"{probe} is not writable",
                     "set XDG_RUNTIME_DIR (or AIPAGER_SOCKET_PATH) to a folder you own")
    return Check("socket", True, sock)


def _saved_state(env: dict[str, str]) -> Check:
    """The daemon's saved state: readable, and no damaged copy set aside."""
    from aipager.daemon import persist

    state = persist.load_state(env)
    kept = persist.kept_aside(env)
    if state.get("state_error"):
        return Check("saved state", False, state["state_error"],
                     "start the daemon: it keeps the damaged file aside and restores what it can")
    if kept:
        daemon = state.get("daemon")
        if not isinstance(daemon, dict):
            daemon = {}
        why = daemon.get("state_error") if isinstance(daemon.get("state_error"), str) else ""
        detail = f"{len(kept)} damaged state file(s) kept aside: {', '.join(kept)}"
        return Check("saved state", False, f"{detail}. {why}" if why else detail,
                     "look at them for anything lost, then delete them")
    return Check("saved state", True, paths.daemon_state_file(env))


def _floor(env: dict[str, str]) -> Check:
    """The owner's policy file is usable and its floor is what the hook enforces."""
    from aipager.policy import floor, model

    fix = "fix the file (`aipager policy check` lists the problems)"
    try:
        wanted = model.effective_floor(model.load_policy(env), env)
    except AipagerError as exc:
        return Check("safety floor", False, str(exc), fix)
    except Exception as exc:  # noqa: BLE001 - a broken policy file is a finding here
        return Check("safety floor", False, f"{paths.policy_user_file(env)}: {exc}", fix)
    enforced = floor.load_floor(env)
    missing = sum(1 for key, items in wanted.items() if isinstance(items, list)
                  for item in items if item not in (enforced.get(key) or ()))
    if missing:
        return Check("safety floor", False,
                     f"{missing} rule(s) of the policy file's floor are not published, so the "
                     "hook does not enforce them",
                     "start the daemon (it publishes at once), or `aipager policy check --apply`")
    return Check("safety floor", True, f"published at {paths.floor_file(env)}")


def _private_files(env: dict[str, str]) -> Check:
    """Config, logs, state, journal, audit and chat files: ours and closed to others.

    They hold the bot token, Claude's answers and what was typed; another user
    on the machine must not read them (issue 16).  Only what exists is checked.
    """
    folders = [paths.config_dir(env), paths.state_dir(env), paths.files_dir(env)]
    files = [paths.config_file(env), paths.daemon_state_file(env), paths.journal_file(env),
             paths.chat_state_file(env), paths.audit_log(env), paths.log_file(env)]
    problems: list[str] = []
    loose: dict[str, list[str]] = {"700": [], "600": [], "go-w": []}
    # the policy file holds no secret (an editor may well make it 0644); others must
    # not be able to change it
    checked = ([(f, 0o077, "700") for f in folders] + [(f, 0o077, "600") for f in files]
               + [(paths.policy_user_file(env), 0o022, "go-w")])
    for path, closed, fix in checked:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"{path}: cannot check it ({exc.strerror})")
            continue
        foreign = trust.foreign_finding(path, st, "file")
        if foreign is not None:
            problems.append(foreign.what)
        elif st.st_mode & closed:
            problems.append(f"{path} is open to others ({stat.filemode(st.st_mode)})")
            loose[fix].append(path)
    if not problems:
        return Check("private files", True, "config, logs, state and audit are yours alone")
    fixes = [f"chmod {mode} {' '.join(found)}" for mode, found in loose.items() if found]
    if len(fixes) < len(problems):
        fixes.append("move what is not yours, or a symlink, away (aipager makes its own)")
    return Check("private files", False, "; ".join(problems), "; ".join(fixes))


def _daemon(env: dict[str, str], start: str = "aipager start") -> Check:
    pids = sorted(daemon_pids(env))
    if pids:
        return Check("daemon", True, f"running (pid {', '.join(map(str, pids))})")
    return Check("daemon", False, "not running",
                 f"run `{start}` (foreground) or `aipager service install"
                 f"{start.removeprefix('aipager start')}`")


_NEW_INVITE = ("ask for a new invite (`aipager hub invite NAME` on the hub) and join with "
               "the new file")


def _joined(env: dict[str, str], joined: Any) -> list[Check]:
    """A host of a hub: its credential file and the hub's address instead of a bot."""
    from aipager.hub.conn import check_transport
    from aipager.hub.creds import read_creds

    try:
        who = read_creds(joined.creds)
    except AipagerError as exc:
        return [Check("hub creds", False, str(exc), _NEW_INVITE)]
    checks = [Check("hub creds", True, f"{joined.creds} (host {who.user})")]
    try:
        check_transport(joined.url, who)
    except AipagerError as exc:
        checks.append(Check("hub address", False, str(exc), _NEW_INVITE))
    else:
        how = "TLS with the hub's own CA" if who.ca else "loopback"
        checks.append(Check("hub address", True, f"{joined.url} ({how})"))
    return checks


def link_check(facts: Any, url: str, now: float) -> Check:
    """What the running daemon last saved about its link to the hub (pure)."""
    if not isinstance(facts, dict):
        return Check("hub link", False, "the daemon has not said anything about the hub yet",
                     "look at `aipager status --json` again in a few seconds")
    since = facts.get("since")
    when = (time.strftime(" since %H:%M:%S", time.localtime(since))
            if isinstance(since, (int, float)) and since <= now else "")
    if facts.get("connected"):
        refused = _refused_commands(facts)
        if refused:
            # the link works, but someone with the hub's broker login sent what the hub
            # did not sign, or sent a command again: none of it ran, and the owner should know
            return Check("hub link", False, f"connected to {url}{when}; {refused}",
                         "none of them ran; only the hub's own login may publish commands, "
                         "so find out who else can read the hub's hub.json (the hub's state "
                         "folder) or its server's address and login")
        return Check("hub link", True, f"connected to {url}{when}")
    if facts.get("revoked"):
        return Check("hub link", False, f"{facts.get('problem') or 'revoked'}{when}",
                     _NEW_INVITE)
    if facts.get("problem"):
        return Check("hub link", False, str(facts["problem"]), _NEW_INVITE)
    return Check("hub link", False, f"not connected{when or ' yet'}: the hub's broker at "
                 f"{url} does not answer", "check that the hub runs (`aipager start --hub`) "
                 "and that this machine reaches it")


def _refused_commands(facts: dict[str, Any]) -> str:
    """What the host refused of the commands it was sent, in words ("" for none)."""
    replayed = facts.get("commands_replayed") or 0
    refused = facts.get("commands_refused") or 0
    if not isinstance(replayed, int) or not isinstance(refused, int) or not replayed + refused:
        return ""
    parts = ([f"{refused} unsigned, forged or stale"] if refused else []) + \
        ([f"{replayed} sent again"] if replayed else [])
    return f"refused {replayed + refused} command(s) since it started ({', '.join(parts)})"


def _host_checks(env: dict[str, str], joined: Any) -> list[Check]:
    """Every check of a machine that joined a hub: no config, bot or chat (the hub owns
    them), its credential, the hub's address and the link instead."""

    start = f"aipager start --join {joined.url} --creds {joined.creds}"
    checks = _joined(env, joined)
    checks.append(_program("dtach", lambda: dtach.dtach_binary(env),
                           "reinstall aipager (it brings dtach-bin) or install dtach"))
    checks.append(_program("claude", lambda: dtach.claude_binary(env, None),
                           "install Claude Code"))
    checks += [Check(c.name, c.ok, c.detail, c.fix.replace("`aipager config rewire` (or "
                                                           "`aipager setup`)", f"`{start}`"))
               for c in _wiring(env)]
    checks += _on_this_machine(env)
    daemon = _daemon(env, start)
    checks.append(daemon)
    if daemon.ok:
        state, _problem = load_state(env)
        facts = state.get("daemon") if isinstance(state, dict) else None
        checks.append(link_check(facts.get("hub_link") if isinstance(facts, dict) else None,
                                 joined.url, time.time()))
    return checks


def _joined_hub(env: dict[str, str]) -> Any:
    """The hub this machine is a host of, or None.  The join's record stays after a plain
    start (it keeps the credential file in the floor), so a running daemon decides by
    whether it has a hub link; a stopped one, by whether a chat was set up."""
    from aipager.hub import joined

    record = joined.load(env)
    if record is None:
        return None
    if daemon_pids(env):
        state, _problem = load_state(env)
        facts = state.get("daemon") if isinstance(state, dict) else None
        return record if isinstance(facts, dict) and "hub_link" in facts else None
    return None if config.exists(env) else record


def run_checks(env: dict[str, str], offline: bool = False) -> list[Check]:
    """Every check, in the order a person would fix them."""
    host = _joined_hub(env)
    if host is not None:
        return _host_checks(env, host)
    first, cfg = _config(env)
    checks = [first]
    if not offline and cfg is not None:
        checks += _telegram(env, cfg)
    checks.append(_program("dtach", lambda: dtach.dtach_binary(env),
                           "reinstall aipager (it brings dtach-bin) or install dtach"))
    pinned = cfg.claude_path if cfg else None
    checks.append(_program("claude", lambda: dtach.claude_binary(env, pinned),
                           "install Claude Code, or `aipager config claude-path PATH`"))
    checks += _wiring(env)
    checks += _on_this_machine(env)
    checks.append(_daemon(env))
    return checks


def _on_this_machine(env: dict[str, str]) -> list[Check]:
    """The checks a hub's host and a machine with its own chat share: the hooks, Codex's
    wiring, the control socket, the floor, the saved state and the private files."""
    return [*_hooks(env), *_codex(env), _socket(env), _floor(env), _saved_state(env),
            _private_files(env)]


@handles_errors
def doctor(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    offline: bool = typer.Option(False, "--offline", help="Skip the Telegram checks."),
) -> None:
    """Check config, token, chat, dtach, claude, wiring, hook builds, socket and daemon
    (on a host of a hub: its credential, the hub's address and the link instead of the bot)."""
    checks = run_checks(_env(), offline=offline)
    failed = [c for c in checks if not c.ok]
    if as_json:
        print_json([c.__dict__ for c in checks])
    else:
        for c in checks:
            typer.echo(f"{'ok  ' if c.ok else 'FAIL'}  {c.name:<14} {c.detail}")
            if not c.ok and c.fix:
                typer.echo(f"      {'':<14} fix: {c.fix}")
        typer.echo("all good" if not failed else f"{len(failed)} problem(s)")
    raise typer.Exit(1 if failed else 0)
