"""aipager's own configuration: one owner-only JSON file at ``paths.config_file``.

The file holds the bot token, so it is written 0600 through a temporary file
and a rename (a crash never leaves half a token on disk), and ``Config``'s
``repr`` masks the token so it can never reach a log by accident.

Layout (``schema_version`` 1)::

    {"schema_version": 1, "bot_token": "123:abc", "chat_id": 42,
     "members": [{"id": 7, "label": "alice", "role": "admin"}],
     "policy_file": null, "claude_path": null}

Optional keys kept in ``Config.extra`` (checked here when they have a fixed form):
``language``, the language of what the chat says on its own (``aipager.locales``:
``en``, ``pt_BR``, ``es``, ``vi``); without it the chat speaks the language of whoever
last wrote there.  ``private`` (``true``/``false``): private mode, the chat carries names,
states and buttons only and the content stays on the page (``aipager.bot.private``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping
from urllib.parse import urlsplit

from aipager import locales
from aipager.proto import paths
from aipager.proto.errors import ConfigError
from aipager.proto import fsio

SCHEMA_VERSION = 1

#: the built-in team roles, strongest first; the policy file may define more
#: (``aipager.policy.model`` is the one source of what a role may do)
ROLES = ("owner", "admin", "user", "read_only")
#: what a role name looks like (custom roles from the policy file included)
_ROLE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")

# The Bot API token shape: "<bot id>:<secret>".  Checked before any network
# call so a pasted chat id or a stray newline fails with a clear message.
_TOKEN_RE = re.compile(r"^\d{3,}:[A-Za-z0-9_-]{20,}$")


@dataclass(frozen=True)
class Member:
    """One person allowed to drive sessions from the chat."""

    id: int
    role: str = "user"
    label: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "role": self.role}


@dataclass(frozen=True)
class Config:
    """The whole configuration.  Immutable: change it with ``dataclasses.replace``."""

    bot_token: str
    chat_id: int
    members: tuple[Member, ...] = ()
    policy_file: str | None = None
    claude_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __repr__(self) -> str:
        # Never let the secret half of the token reach a log or a traceback.
        return (
            f"Config(bot_token={mask_token(self.bot_token)!r}, chat_id={self.chat_id}, "
            f"members={self.members!r}, policy_file={self.policy_file!r}, "
            f"claude_path={self.claude_path!r})"
        )

    __str__ = __repr__

    def to_json(self) -> dict[str, Any]:
        doc = dict(self.extra)
        doc.update(
            schema_version=SCHEMA_VERSION,
            bot_token=self.bot_token,
            chat_id=self.chat_id,
            members=[m.to_json() for m in self.members],
            policy_file=self.policy_file,
            claude_path=self.claude_path,
        )
        return doc

    def with_member(self, member: Member) -> Config:
        """A copy with ``member`` added, or replacing the member with the same id."""
        others = tuple(m for m in self.members if m.id != member.id)
        return replace(self, members=others + (member,))

    def without_member(self, member_id: int) -> Config:
        """A copy without the member ``member_id`` (unknown ids change nothing)."""
        return replace(self, members=tuple(m for m in self.members if m.id != member_id))


def mask_token(token: str) -> str:
    """The token as it may be shown: the bot id and the last two characters."""
    bot_id, sep, secret = token.partition(":")
    if not sep:
        return "***"
    return f"{bot_id}:…{secret[-2:]}" if len(secret) > 6 else f"{bot_id}:***"


def check_token_shape(token: str) -> str:
    """Return ``token`` stripped, or raise ``ConfigError`` if it cannot be a bot token.

    The message never contains the token itself.
    """
    token = token.strip()
    if not _TOKEN_RE.match(token):
        msg = "that is not a bot token (expected '<digits>:<secret>', as @BotFather gives it)"
        raise ConfigError(msg)
    return token


#: Telegram's ids have at most 52 significant bits (the Bot API keeps them
#: exact in a double); private chats and users are positive, groups negative,
#: supergroups and channels -100… (-1000000000000 - their own id)
ID_LIMIT = 1 << 52


def check_chat_id(chat_id: int) -> int:
    """Return ``chat_id`` if Telegram could have made it, else raise ``ConfigError``."""
    if isinstance(chat_id, bool) or not isinstance(chat_id, int) or not 0 < abs(chat_id) < ID_LIMIT:
        msg = (f"{chat_id} is not a Telegram chat id: a private chat's id is positive, a "
               "group's negative (a supergroup's starts with -100), and none is 0 or "
               "longer than 52 bits")
        raise ConfigError(msg)
    return chat_id


def check_user_id(user_id: int) -> int:
    """Return ``user_id`` if it can be a Telegram user's id, else raise ``ConfigError``."""
    if isinstance(user_id, bool) or not isinstance(user_id, int) or not 0 < user_id < ID_LIMIT:
        msg = (f"{user_id} is not a Telegram user id: those are positive and at most 52 bits "
               "(a negative id is a group's)")
        raise ConfigError(msg)
    return user_id


def check_role(role: str, env: Mapping[str, str] | None = None) -> str:
    """Return ``role`` if it names a role, else raise ``ConfigError``.

    With ``env`` the role must exist in the owner's policy (built-in or custom
    roles); without it only the name's shape is checked (a config may name a
    custom role of a policy file that is read later).
    """
    if not isinstance(role, str) or not _ROLE_NAME.match(role):
        msg = f"{role!r} is not a valid role name"
        raise ConfigError(msg)
    if env is None:
        return role
    from aipager.proto.errors import PolicyError
    from aipager.policy import model

    try:
        known = model.load_policy(env).roles
    except PolicyError as exc:
        msg = f"cannot check role {role!r}: {exc}"
        raise ConfigError(msg) from exc
    if role not in known:
        msg = f"unknown role {role!r}; use one of: {', '.join(known)}"
        raise ConfigError(msg)
    return role


def web_public_url(env: Mapping[str, str], cfg: Config | None) -> str:
    """The HTTPS address the person put in front of the web page, for the Telegram Mini App
    (``AIPAGER_WEB_PUBLIC_URL``, else the config's ``web_public_url``), without a final
    ``/``; "" when there is none.

    Raises:
        ConfigError: it is not an ``https://`` address (Telegram opens Mini Apps over HTTPS
            only).
    """
    value = env.get("AIPAGER_WEB_PUBLIC_URL") or (cfg.extra.get("web_public_url") if cfg else "")
    url = str(value or "").strip()
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.netloc:
        msg = (f"web_public_url {url!r} must be an https:// address (a Telegram Mini App is "
               "only opened over HTTPS)")
        raise ConfigError(msg)
    return url.rstrip("/")


def private(cfg: Config | None) -> bool:
    """Whether private mode is on: what Claude writes, reads, runs and is asked never goes
    to the Bot API (``aipager.bot.private``); the page shows it."""
    return cfg is not None and cfg.extra.get("private") is True


def new_session_folder(env: Mapping[str, str], cfg: Config | None) -> str:
    """Where a session starts when no folder is named: the config's ``new_session_folder``
    when it is a folder on this machine, else HOME (the chat, the page and a hub's host
    alike)."""
    folder = cfg.extra.get("new_session_folder") if cfg is not None else None
    if isinstance(folder, str) and os.path.isdir(folder):
        return folder
    return env.get("HOME") or os.path.expanduser("~")


def default_folder(env: Mapping[str, str]) -> str:
    """``new_session_folder`` of the config as it is now (read at each start: it can change);
    HOME without a usable one (before setup, or a joined host, which needs none)."""
    try:
        cfg: Config | None = load(env)
    except ConfigError:
        cfg = None
    return new_session_folder(env, cfg)


def exists(env: Mapping[str, str]) -> bool:
    """Whether a config file is present (it may still be invalid)."""
    return os.path.isfile(paths.config_file(env))


def load(env: Mapping[str, str]) -> Config:
    """Read and validate the config file.

    Raises:
        ConfigError: the file is missing, unreadable, not JSON, or a field is
            missing or of the wrong type.  The message names the file and the
            field, never the token.
    """
    path = paths.config_file(env)
    try:
        doc = fsio.read_json_file(path, ConfigError)
    except FileNotFoundError as exc:
        msg = f"aipager is not set up yet ({path} does not exist); run `aipager setup`"
        raise ConfigError(msg) from exc
    return from_json(doc, path)


def from_json(doc: Any, where: str = "config") -> Config:
    """Build a ``Config`` from a decoded document, validating every field."""
    if not isinstance(doc, dict):
        msg = f"{where}: expected a JSON object at the top level"
        raise ConfigError(msg)
    version = doc.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        msg = f"{where}: schema_version {version!r} is not supported (expected {SCHEMA_VERSION})"
        raise ConfigError(msg)
    token = doc.get("bot_token")
    if not isinstance(token, str) or not token:
        msg = f"{where}: bot_token is missing"
        raise ConfigError(msg)
    chat_id = doc.get("chat_id")
    if not isinstance(chat_id, int) or isinstance(chat_id, bool):
        msg = f"{where}: chat_id must be an integer"
        raise ConfigError(msg)
    try:
        check_chat_id(chat_id)
    except ConfigError as exc:
        msg = f"{where}: {exc}"
        raise ConfigError(msg) from None
    members = tuple(_member(m, where) for m in doc.get("members") or ())
    policy_file = _opt_str(doc, "policy_file", where)
    claude_path = _opt_str(doc, "claude_path", where)
    _check_language(doc.get("language"), where)
    if not isinstance(doc.get("private", False), bool):
        # a guess either way is wrong: "yes" taken as off would send what should stay home
        msg = f"{where}: private must be true or false (`aipager config private on|off`)"
        raise ConfigError(msg)
    known = {"schema_version", "bot_token", "chat_id", "members", "policy_file", "claude_path"}
    # Unknown keys survive a load/save round trip (a newer aipager may have written them).
    extra = {k: v for k, v in doc.items() if k not in known}
    return Config(token, chat_id, members, policy_file, claude_path, extra)


def _check_language(value: Any, where: str) -> None:
    if value is None or (isinstance(value, str) and locales.exact(value)):
        return
    msg = (f"{where}: language {value!r} is not a language aipager speaks; use one of: "
           f"{', '.join(locales.LOCALES)} (or remove it: the chat then speaks the language of "
           "whoever last wrote there)")
    raise ConfigError(msg)


def _member(doc: Any, where: str) -> Member:
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), int):
        msg = f"{where}: each member needs an integer id"
        raise ConfigError(msg)
    role = doc.get("role", "user")
    check_role(role)
    label = doc.get("label") or ""
    return Member(id=doc["id"], role=role, label=str(label))


def _opt_str(doc: dict, key: str, where: str) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        msg = f"{where}: {key} must be a string or null"
        raise ConfigError(msg)
    return value or None


def save(env: Mapping[str, str], cfg: Config) -> str:
    """Write ``cfg`` owner-only (0600) and atomically; return the path.

    Raises:
        ConfigError: the folder cannot be created or the file written.
    """
    path = paths.config_file(env)
    folder = os.path.dirname(path)
    data = json.dumps(cfg.to_json(), indent=2, sort_keys=True) + "\n"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        # created 0600 before a byte of the token is written
        fsio.write_atomic(path, data.encode("utf-8"), 0o600, sync=True)
    except OSError as exc:
        msg = f"cannot write {path}: {exc.strerror}"
        raise ConfigError(msg) from exc
    return path
