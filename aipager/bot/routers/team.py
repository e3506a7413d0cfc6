"""Team commands: /whoami, /members, /role (as a reply), /invite and /join.

Membership lives in the config file (``aipager config member …`` edits the
same list); every change here is written there, audited, and counts from the
next message on (the access middleware re-reads the file).  Only members who
may manage change roles; only the owner hands out ``owner`` or ``admin`` or
changes an admin.
"""

from __future__ import annotations

import logging
import secrets
import time

from aiogram import Router
from aiogram.filters import Command, CommandObject
from aiogram.types import Message

from aipager import config
from aipager.bot.actions import Actions, Sender
from aipager.bot.access import Members
from aipager.bot.routers.commands import refused
from aipager.errors import ConfigError

log = logging.getLogger("aipager.bot")

#: how long an invitation code works
INVITE_SECONDS = 24 * 3600.0
STRONG = ("owner", "admin")


async def on_whoami(message: Message, actions: Actions, sender: Sender) -> None:
    words = ", ".join(sender.rights())
    actions.say(message.chat.id, f"You are {sender.tag} ({sender.user_id}), role {sender.role}: "
                f"you may {words}.", reply_to=message.message_id)


async def on_members(message: Message, actions: Actions, sender: Sender,
                     members: Members) -> None:
    if refused(actions, message, sender, "manage"):
        return
    cfg = members.current()
    lines = ["Members:"]
    for m in sorted(cfg.members, key=lambda m: (config.ROLES.index(m.role)
                                                 if m.role in config.ROLES else 9, m.label)):
        you = "  ← you" if m.id == sender.user_id else ""
        lines.append(f"• {m.label or m.id} ({m.id}) · {m.role}{you}")
    if len(lines) == 1:
        lines.append("nobody yet: reply /role user to someone's message, or /invite")
    actions.say(message.chat.id, "\n".join(lines))


def _may_assign(sender: Sender, role: str, current: str | None) -> str | None:
    if sender.role != "owner" and (role in STRONG or current in STRONG):
        return "Only the owner hands out or changes owner and admin roles."
    return None


async def on_role(message: Message, command: CommandObject, actions: Actions, sender: Sender,
                  members: Members) -> None:
    if refused(actions, message, sender, "manage"):
        return
    role = (command.args or "").strip()
    target = message.reply_to_message.from_user if message.reply_to_message else None
    if target is None or target.is_bot or not role:
        actions.say(message.chat.id, "Reply to someone's message with /role ROLE (for example "
                    "/role user), or /role none to remove them.", reply_to=message.message_id)
        return
    cfg = members.current()
    current = next((m for m in cfg.members if m.id == target.id), None)
    label = target.username or target.first_name or str(target.id)
    try:
        if role == "none":
            if why := _may_assign(sender, "user", current.role if current else None):
                raise ConfigError(why)
            new = cfg.without_member(target.id)
        else:
            config.check_role(role, actions.env)
            if why := _may_assign(sender, role, current.role if current else None):
                raise ConfigError(why)
            new = cfg.with_member(config.Member(target.id, role, current.label if current
                                                and current.label else label))
        config.save(actions.env, new)
    except ConfigError as exc:
        actions.say(message.chat.id, f"🔒 {exc}", reply_to=message.message_id)
        return
    actions.audit("member_role", sender, target_id=target.id, target=label, new_role=role)
    actions.say(message.chat.id, f"{label} is now {role if role != 'none' else 'not a member'} "
                f"(by {sender.tag}).")


async def on_invite(message: Message, command: CommandObject, actions: Actions,
                    sender: Sender) -> None:
    if refused(actions, message, sender, "manage"):
        return
    role = (command.args or "user").strip()
    try:
        config.check_role(role, actions.env)
        if why := _may_assign(sender, role, None):
            raise ConfigError(why)
    except ConfigError as exc:
        actions.say(message.chat.id, f"🔒 {exc}", reply_to=message.message_id)
        return
    now = time.time()
    invites = actions.state.invites
    for code in [c for c, v in invites.items() if v.get("expires", 0) < now]:
        del invites[code]
    code = secrets.token_hex(4)
    invites[code] = {"role": role, "by": sender.user_id, "expires": now + INVITE_SECONDS}
    actions.audit("member_invite", sender, new_role=role)
    actions.say(message.chat.id, f"Invitation for one person as {role}, valid for a day: they "
                f"send /join {code} here.")


async def on_join(message: Message, command: CommandObject, actions: Actions,
                  members: Members) -> None:
    """Reached by people who are not members yet (the access middleware lets /join pass)."""
    user = message.from_user
    code = (command.args or "").strip()
    invite = actions.state.invites.pop(code, None) if code else None
    if user is None or invite is None or invite.get("expires", 0) < time.time():
        actions.say(message.chat.id, "That invitation code is not valid (used, expired or "
                    "mistyped).", reply_to=message.message_id)
        return
    cfg = members.current()
    label = user.username or user.first_name or str(user.id)
    if any(m.id == user.id for m in cfg.members):
        actions.say(message.chat.id, f"{label} is a member already.")
        return
    try:
        config.save(actions.env, cfg.with_member(config.Member(user.id, invite["role"], label)))
    except ConfigError as exc:
        actions.say(message.chat.id, f"Could not add you: {exc}")
        return
    actions.audit("member_join", {"user_id": user.id, "label": label, "role": invite["role"]},
                  invited_by=invite.get("by"))
    actions.say(message.chat.id, f"Welcome, {label}: you joined as {invite['role']}.")


def make_router() -> Router:
    """The team handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="team")
    router.message.register(on_whoami, Command("whoami"))
    router.message.register(on_members, Command("members"))
    router.message.register(on_role, Command("role"))
    router.message.register(on_invite, Command("invite"))
    router.message.register(on_join, Command("join"))
    return router
