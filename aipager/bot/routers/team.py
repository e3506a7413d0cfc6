"""Team commands: /whoami, /members, /role (as a reply), /invite and /join.

Membership lives in the config file (``aipager config member …`` edits the
same list); every change here is written there, audited, and counts from the
next message on (the access middleware re-reads the file).  Only members who
may manage (the handlers' ``rights`` flag) list members, change roles and invite;
only the owner hands out ``owner`` or ``admin`` or changes an admin.

The service makes and keeps the invitation codes and adds whoever joins (``InviteAs``,
``JoinTeam``); the chat words what it did.  A stranger's ``/join`` is answered within the
budgets of ``strangers`` (then silence, and even a right code is refused until the window
ends, without asking the service); a member's ``/join`` uses up no code.  A name that
would pass for another member, a role or a mention (``Sender.tag`` puts an ``@`` before
labels) is not taken as a label: the person is shown by their id instead.
"""

from __future__ import annotations

import logging
from typing import Any

from aiogram import Router
from aiogram.filters import Command, CommandObject
from aiogram.types import Message

from aipager import config
from aipager.bot.i18n import _, ngettext, number
from aipager.bot.actions import Actions, Sender
from aipager.bot.access import Members
from aipager.bot.strangers import WINDOW, Strangers
from aipager.bot.rights import MANAGE, like, need
from aipager.bot.flows import said
from aipager.port.commands import AssignRole, InviteAs, JoinTeam
from aipager.clients.words import words
from aipager.port.results import Declined, Joined, RoleGiven
from aipager.port.rights import Reason

log = logging.getLogger("aipager.bot")

def _shown_as(label: str, looked: str, theirs: bool = False) -> str:
    """The sentence that says a name was not taken (empty when it was)."""
    # The name itself is not repeated: "@owner" in a post would mention the real owner.
    if not looked:
        return ""
    words = (_("Their name looked like {what}, so the label is {label}.") if theirs
             else _("Your name looked like {what}, so the label is {label}."))
    return " " + words.format(what=_(looked), label=label)


async def on_whoami(message: Message, actions: Actions, sender: Sender) -> None:
    words = ", ".join(sender.rights())
    actions.say(message.chat.id, _("You are {who} ({id}), role {role}: you may {rights}.").format(
        who=sender.tag, id=sender.user_id, role=sender.role, rights=words), reply_to=message.message_id)


async def on_members(message: Message, actions: Actions, sender: Sender,
                     members: Members) -> None:
    cfg = members.current()
    lines = [_("Members:")]
    for m in sorted(cfg.members, key=lambda m: (config.ROLES.index(m.role)
                                                 if m.role in config.ROLES else 9, m.label)):
        you = "  " + _("← you") if m.id == sender.user_id else ""
        lines.append(f"• {m.label or m.id} ({m.id}) · {m.role}{you}")
    if len(lines) == 1:
        lines.append(_("nobody yet: reply /role user to someone's message, or /invite"))
    actions.say(message.chat.id, "\n".join(lines))


async def on_role(message: Message, command: CommandObject, actions: Actions, sender: Sender,
                  members: Members) -> None:
    role = (command.args or "").strip()
    target = message.reply_to_message.from_user if message.reply_to_message else None
    if target is None or target.is_bot or not role:
        actions.say(message.chat.id, _("Reply to someone's message with /role ROLE (for example "
                                       "/role user), or /role none to remove them."), reply_to=message.message_id)
        return
    result = await actions.port.ask(AssignRole(sender, target.id, role,
                                               target.username or target.first_name or ""))
    if not isinstance(result, RoleGiven):
        said(actions, message.chat.id, result, reply_to=message.message_id)
        return
    done = (_("{label} is now {role} (by {who}).") if role != "none"
            else _("{label} is not a member now (by {who})."))
    actions.say(message.chat.id, done.format(label=result.label, role=role, who=sender.tag)
                + _shown_as(result.label, result.looked, theirs=True))


async def on_invite(message: Message, command: CommandObject, actions: Actions,
                    sender: Sender) -> None:
    role = (command.args or "user").strip()
    # the code, or why there is none (``words``)
    said(actions, message.chat.id, await actions.port.ask(InviteAs(sender, role)),
         reply_to=message.message_id)


async def on_join(message: Message, command: CommandObject, actions: Actions, sender: Sender,
                  strangers: Strangers) -> None:
    """Reached by anyone: the access middleware lets a stranger's /join pass as a guest."""
    user = message.from_user
    chat_id = message.chat.id
    if user is None:
        return
    who = {"user_id": user.id, "label": sender.label, "role": sender.role}
    if strangers.locked(chat_id, user.id):
        # Not even a right code: guessing on in silence must get nowhere.  The code is
        # left for its invitee.
        _silenced(actions, strangers, chat_id, who, "locked out")
        return
    wanted = user.username or user.first_name or ""
    result = await actions.port.ask(JoinTeam(sender, (command.args or "").strip(), wanted))
    match result:
        case Joined(label=label, looked=looked):
            actions.say(chat_id, words(result, _) + _shown_as(label, looked))
        case Declined(reason=Reason.MEMBER_ALREADY):
            actions.audit("join_refused", sender, reason="member already")
            actions.say(chat_id, _("{who} is a member already; the code stays valid.").format(
                who=sender.tag), reply_to=message.message_id)
        case Declined(reason=Reason.NOT_INVITED, subject=why):
            left = strangers.failed(chat_id, user.id)
            if not strangers.may_reply(chat_id):
                _silenced(actions, strangers, chat_id, who, why)
                return
            actions.audit("join_refused", who, reason=why, tries_left=left)
            minutes = round(WINDOW / 60)
            last = "" if left else " " + ngettext("No more tries for {n} minute.",
                                                  "No more tries for {n} minutes.",
                                                  minutes).format(n=number(minutes))
            actions.say(chat_id, _("That invitation code is not valid (used, expired or "
                                   "mistyped).") + last, reply_to=message.message_id, low=True)
        case _:  # the config could not be written: the code stays, try again
            said(actions, chat_id, result, reply_to=message.message_id)


def _silenced(actions: Actions, strangers: Strangers, chat_id: int, who: dict[str, Any],
              reason: str) -> None:
    """An attempt nobody is told about: counted, and audited at the 1st, 10th, 100th… of
    the chat's window (``count`` says how many so far)."""
    count = strangers.silenced(chat_id)
    if count is not None:
        actions.audit("join_silenced", who, reason=reason, count=count)


def make_router() -> Router:
    """The team handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="team")
    router.message.register(on_whoami, Command("whoami"))
    router.message.register(on_members, Command("members"), flags=need(MANAGE))
    router.message.register(on_role, Command("role"), flags=like("role"))
    router.message.register(on_invite, Command("invite"), flags=like("invite"))
    router.message.register(on_join, Command("join"))
    return router
