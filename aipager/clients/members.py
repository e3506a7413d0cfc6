"""The config's people and the policy's roles: who a Telegram user is here.

A person is resolved against the config, whichever client they use (a chat
message, a tap, a request from the Mini App): in a private chat its person is
the owner; in a group each member has the role the config gives them; what the
role may do is the door's to say (the policy file, read by the daemon).  The config is read again when its
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
from aipager.port.door import Port
from aipager.proto.errors import ConfigError
from aipager.proto.fsnames import file_stamp

log = logging.getLogger("aipager.clients")


class Members:
    """The config's chat and members, re-read when the file changes; what each one's role
    lets them do is the door's to say (``attach``)."""

    def __init__(self, env: Mapping[str, str], cfg: config.Config) -> None:
        self._env = env
        self.cfg = cfg
        self._stamp = file_stamp(paths.config_file(env))
        self._port: Port | None = None

    def attach(self, port: Port) -> None:
        """The door that resolves a role's rights (the owner's policy, read by the daemon)."""
        self._port = port

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
        if self._port is None:
            msg = "attach the members to the door before resolving anyone"
            raise RuntimeError(msg)
        raw = self.current().extra.get("owner_raw_keys") is True
        return self._port.person(user_id, label, role_name, raw_keys=raw)


__all__ = ["Members"]
