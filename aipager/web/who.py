"""Who a request acts as: the owner at the machine, or a Telegram member in the Mini App.

The person who opened the link ``aipager start`` printed is the owner (the machine
is theirs), named ``@web``; a Mini App's Telegram user is resolved exactly as a chat
message of theirs would be (``clients.members.Members``), so they act with their
aipager role.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from aipager import config
from aipager.proto import paths
from aipager.clients.members import Members
from aipager.clients.people import Sender
from aipager.port.door import Port
from aipager.proto.fsnames import file_stamp
from aipager.web.auth import INIT_DATA_MAX_AGE, AuthError, NotMember, check_init_data

#: how the owner at the machine is named (verdict lines, the audit log)
LOCAL_LABEL = "web"


class People:
    """Resolves requests to senders.

    Args:
        env: paths (the policy file) and knobs.
        members: the config's members, or None before Telegram is set up.
        max_age: seconds a Mini App's initData is good for after Telegram signed it.
    """

    def __init__(self, env: Mapping[str, str], members: Members | None,
                 max_age: float = INIT_DATA_MAX_AGE) -> None:
        self.env = env
        self.members = members
        self.max_age = max_age
        self._local: tuple[Any, Sender] | None = None
        self._port: Port | None = None

    def attach(self, port: Port) -> None:
        """The door that says what a role may do (and its members' too)."""
        self._port = port
        if self.members is not None:
            self.members.attach(port)

    def private(self) -> bool:
        """Whether private mode is on (the page's badge: the chat carries only names,
        states and buttons, and what it leaves out is read here)."""
        return self.members is not None and config.private(self.members.current())

    def local(self) -> Sender:
        """The owner at the machine (their Telegram id when there is one, else 0)."""
        owner_id = (self.members.owner_id() if self.members is not None else None) or 0
        stamp = (file_stamp(paths.policy_user_file(self.env)), owner_id)
        if self._local is None or self._local[0] != stamp:
            if self._port is None:
                msg = "attach the page's people to the door before resolving anyone"
                raise RuntimeError(msg)
            sender = self._port.person(owner_id, LOCAL_LABEL, "owner")
            # the page types prompts only: the owner's raw-keys opt-in is the chat's
            self._local = (stamp, dataclasses.replace(sender, raw_keys=False))
        return self._local[1]

    def telegram(self, init_data: str, now: float | None = None) -> Sender:
        """The Mini App's user with their role.

        Raises:
            AuthError: Telegram is not set up, the initData is not this bot's, or the
                user is not a member here.
        """
        if self.members is None:
            raise AuthError("Telegram is not set up here")
        cfg = self.members.current()
        user = check_init_data(init_data, cfg.bot_token, now, self.max_age)
        sender = self.members.sender(cfg.chat_id, user)
        if sender is None:
            raise NotMember("you are not a member here")
        return dataclasses.replace(sender, raw_keys=False)
