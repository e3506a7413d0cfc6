"""The config's people and the policy's roles: who a Telegram user is here.

A person is resolved against the config, whichever client they use (a chat
message, a tap, a request from the Mini App): in a private chat its person is
the owner; in a group each member has the role the config gives them; the
policy file's role says what they may do.  The config is read again when its
file changes, so a member added with ``aipager config member add`` counts from
the next message on.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Mapping

from aipager import config
from aipager.proto import paths
from aipager.clients.people import Sender
from aipager.proto.errors import AipagerError, ConfigError, PatternError, PolicySchemaError
from aipager.proto.fsnames import file_stamp

log = logging.getLogger("aipager.clients")


def load_policy(env: Mapping[str, str]) -> Any:
    """The owner's policy, or why it is unusable (a string naming the file, fit for the
    chat); read again only when the file changed (``model.current_policy``)."""
    from aipager.policy import model

    try:
        return model.current_policy(env)
    except (PolicySchemaError, PatternError):
        # their words quote the file's values; the daemon's log has them (``floorwatch``)
        return (f"{paths.policy_user_file(env)} does not follow the policy's rules "
                "(`aipager policy check` lists what is wrong)")
    except AipagerError as exc:
        return str(exc)  # fsio's words: the file and the line, never the decoder's


def policy_problem(env: Mapping[str, str]) -> str:
    """Why the owner's policy file cannot be used ("" when it can), as ``load_policy``."""
    policy = load_policy(env)
    return policy if isinstance(policy, str) else ""


def with_rights(policy: Any, user_id: int, label: str, role_name: str, *,
                raw_keys: bool = False) -> Sender:
    """The sender with what their role lets them do (``policy``: a loaded policy, or why
    it is unusable).  ``raw_keys`` counts only for the owner."""
    try:
        if isinstance(policy, str):
            raise AipagerError(policy)
        role = policy.role(role_name)
    except AipagerError as exc:
        if role_name != "owner":
            # Unusable policy or unknown role: no rights rather than guessed ones.
            log.error("role %r of %s cannot be resolved (%s): no rights", role_name, label, exc)
            return Sender(user_id, label, role_name, False, False, False,
                          policy_unusable=isinstance(policy, str))
        return Sender(user_id, label, role_name, never_held=True)
    # Raw keystrokes (``!cmd``, Claude Code's own commands) only ever for an owner
    # who opted in: they pass no check at all.
    return Sender(user_id, label, role_name, role.may_prompt, role.may_approve,
                  role.may_manage, exempt=role.exempt, raw_keys=raw_keys and role_name == "owner",
                  never_held=role_name == "owner")


class Members:
    """The config's chat and members, re-read when the file changes."""

    def __init__(self, env: Mapping[str, str], cfg: config.Config) -> None:
        self._env = env
        self.cfg = cfg
        self._stamp = file_stamp(paths.config_file(env))

    def current(self) -> config.Config:
        stamp = file_stamp(paths.config_file(self._env))
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self.cfg = config.load(self._env)
            except ConfigError as exc:
                log.error("the config changed but cannot be read (%s); keeping the old one", exc)
        return self.cfg

    def sender(self, chat_id: int, user: Any) -> Sender | None:
        """The sender's identity in ``chat_id``, or None when they may not act there.

        ``user``: anything with Telegram's ``id``, ``username`` and ``first_name``.
        """
        cfg = self.current()
        if user is None or chat_id != cfg.chat_id:
            return None
        label = user.username or user.first_name or str(user.id)
        member = next((m for m in cfg.members if m.id == user.id), None)
        if member is not None:
            sender = self._with_rights(user.id, member.label or label, member.role)
        elif chat_id > 0 and user.id == chat_id:
            sender = self._with_rights(user.id, label, "owner")  # whose chat setup was done with
        else:
            return None
        username = user.username if isinstance(user.username, str) else ""
        return dataclasses.replace(sender, username=username) if username else sender

    def owner_id(self) -> int | None:
        """The owner's Telegram id: a private chat's person, else a member with role owner."""
        cfg = self.current()
        if cfg.chat_id > 0:
            return cfg.chat_id
        return next((m.id for m in cfg.members if m.role == "owner"), None)

    def _with_rights(self, user_id: int, label: str, role_name: str) -> Sender:
        raw = self.current().extra.get("owner_raw_keys") is True
        return with_rights(load_policy(self._env), user_id, label, role_name, raw_keys=raw)


__all__ = ["Members", "load_policy", "policy_problem", "with_rights"]
