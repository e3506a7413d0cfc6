"""Invitations to the team, made and used up by the service (``InviteAs`` → ``JoinTeam``)
and kept by the daemon (``daemon.invites``): across a restart, hashed at rest, once each."""

from __future__ import annotations

import os
import stat

import pytest
from fakes.port import FakePort
from fakes.telegram_api import TOKEN

from aipager import config
from aipager.daemon import invites
from aipager.daemon.service import Service
from aipager.port.commands import InviteAs, JoinTeam
from aipager.port.results import Declined, Failed, Invitation, Joined
from aipager.port.rights import Reason
from aipager.port.who import Person
from aipager.proto import paths
from aipager.proto.errors import ConfigError

GROUP = -100
ADMIN = Person(1, "ada", "admin", may_manage=True)
MEMBER = Person(2, "ana", "user", may_manage=False, may_approve=False)


def _stranger(user_id: int, name: str) -> Person:
    return Person(user_id, name, "guest", may_prompt=False, may_approve=False, may_manage=False)


@pytest.fixture
def env() -> dict[str, str]:
    env = dict(os.environ)
    config.save(env, config.Config(bot_token=TOKEN, chat_id=GROUP, members=(
        config.Member(1, "admin", "ada"), config.Member(2, "user", "ana"))))
    return env


def _service(env: dict[str, str]) -> Service:
    return Service(FakePort(env), lambda: env["HOME"])


def _roles(env: dict[str, str]) -> dict[int, tuple[str, str]]:
    return {m.id: (m.role, m.label) for m in config.load(env).members}


async def test_an_invitation_made_before_a_restart_lets_one_person_in_once(env):
    made = await _service(env).ask(InviteAs(ADMIN, "user"))
    assert isinstance(made, Invitation) and made.role == "user"
    # the daemon restarted: a new service over the same state folder
    joined = await _service(env).ask(JoinTeam(_stranger(9, "nia"), made.code, "nia"))
    assert joined == Joined(9, "nia", "user", "", 1)
    assert _roles(env)[9] == ("user", "nia")
    again = await _service(env).ask(JoinTeam(_stranger(8, "eve"), made.code, "eve"))
    assert again == Declined(Reason.NOT_INVITED, "unknown code")
    assert 8 not in _roles(env)


async def test_the_file_keeps_no_code_that_would_let_anyone_in(env):
    made = await _service(env).ask(InviteAs(ADMIN, "read_only"))
    assert isinstance(made, Invitation)
    path = paths.invites_file(env)
    with open(path, encoding="utf-8") as fh:
        kept = fh.read()
    assert made.code not in kept and "read_only" in kept
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


async def test_a_members_join_uses_up_no_code_and_a_wrong_one_says_why(env):
    service = _service(env)
    made = await service.ask(InviteAs(ADMIN, "user"))
    assert isinstance(made, Invitation)
    assert await service.ask(JoinTeam(MEMBER, made.code)) == Declined(Reason.MEMBER_ALREADY)
    assert await service.ask(JoinTeam(_stranger(9, "nia"), "")) == \
        Declined(Reason.NOT_INVITED, "no code")
    assert await service.ask(JoinTeam(_stranger(9, "nia"), "0000")) == \
        Declined(Reason.NOT_INVITED, "unknown code")
    assert isinstance(await service.ask(JoinTeam(_stranger(9, "nia"), made.code, "nia")), Joined)


async def test_an_expired_invitation_is_refused_and_dropped(env):
    code, _ = invites.make(env, "user", 1, now=1000.0)
    assert invites.take(env, code, now=1000.0 + invites.VALID_SECONDS + 1) == "expired"
    assert invites.take(env, code, now=1000.0) == "unknown code"  # gone with it


async def test_only_who_may_hand_the_role_out_gets_a_code(env):
    assert await _service(env).ask(InviteAs(MEMBER, "user")) == Declined(Reason.ADMIN_ONLY)
    assert await _service(env).ask(InviteAs(ADMIN, "admin")) == Declined(Reason.OWNER_ASSIGNS)
    assert not os.path.exists(paths.invites_file(env))


async def test_a_join_that_cannot_be_saved_keeps_the_code_good(env, monkeypatch):
    made = await _service(env).ask(InviteAs(ADMIN, "user"))
    assert isinstance(made, Invitation)

    def full_disk(*_args: object) -> str:
        raise ConfigError("cannot write the config: No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(config, "save", full_disk)
        failed = await _service(env).ask(JoinTeam(_stranger(9, "nia"), made.code, "nia"))
    assert isinstance(failed, Failed) and failed.doing == "join"
    assert 9 not in _roles(env)
    assert isinstance(await _service(env).ask(JoinTeam(_stranger(9, "nia"), made.code, "nia")),
                      Joined)


def test_a_damaged_invitations_file_is_read_as_none(env):
    code, _ = invites.make(env, "user", 1, now=1000.0)
    with open(paths.invites_file(env), "w", encoding="utf-8") as fh:
        fh.write("{not json")
    assert invites.take(env, code, now=1000.0) == "unknown code"
    again, _ = invites.make(env, "user", 1, now=1000.0)  # and a new one is kept
    assert isinstance(invites.take(env, again, now=1000.0), invites.Invite)
