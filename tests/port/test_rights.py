"""The one rights check: each use case's record names its right, the chat's command flags
derive from the records, and handing out roles is decided in the same module."""

from __future__ import annotations

import typing

import pytest

from aipager.bot import rights as chat_rights
from aipager.port import commands
from aipager.port.rights import Reason, Right, check, check_assign
from aipager.port.who import Person

OWNER = Person(1, "owner", "owner", never_held=True)
ADMIN = Person(2, "ada", "admin")
USER = Person(3, "gus", "user", may_manage=False)
READER = Person(4, "rita", "read_only", may_prompt=False, may_approve=False, may_manage=False)


def test_every_use_case_names_its_right() -> None:
    for case in typing.get_args(commands.Command):
        assert case.right in typing.get_args(Right), case


def test_joining_needs_no_role_but_every_other_right_does() -> None:
    # a stranger has no role: the code they bring is checked by the service, not here
    stranger = Person(9, "nia", "guest", may_prompt=False, may_approve=False, may_manage=False,
                      policy_unusable=True)
    assert check(stranger, "join") is None
    assert all(check(stranger, right) is not None for right in typing.get_args(Right)
               if right != "join")


def test_the_chats_flags_are_the_records_rights() -> None:
    for name, case in chat_rights.USE_CASES.items():
        flag = chat_rights.COMMANDS[name]
        assert flag == ("" if case.right == "stop" else case.right), name


@pytest.mark.parametrize(("who", "role", "current", "why"), [
    (OWNER, "admin", None, None),
    (OWNER, "user", "admin", None),
    (ADMIN, "user", None, None),
    (ADMIN, "read_only", "user", None),
    (ADMIN, "admin", None, Reason.OWNER_ASSIGNS),
    (ADMIN, "user", "admin", Reason.OWNER_ASSIGNS),
    (ADMIN, "user", "owner", Reason.OWNER_ASSIGNS),
    (USER, "user", None, Reason.ADMIN_ONLY),
    (READER, "read_only", None, Reason.ADMIN_ONLY),
])
def test_who_may_hand_out_which_role(who: Person, role: str, current: str | None,
                                     why: Reason | None) -> None:
    assert check_assign(who, role, current) == why


def test_a_member_with_an_unusable_policy_may_do_nothing() -> None:
    broken = Person(5, "bob", "admin", policy_unusable=True)
    assert check(broken, "prompt") == check_assign(broken, "user", None) == \
        Reason.POLICY_UNUSABLE
