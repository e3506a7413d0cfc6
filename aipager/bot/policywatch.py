"""Telling the chat when the owner's policy file stops (or starts again) being usable.

A damaged ``policy.json`` fails closed: every member but the owner has no rights
(``daemon.people.with_rights``, through the door), and their messages are refused saying so.  The owner
must hear why, in the chat, or the team is locked out with the reason only in the log:
``PolicyWatch.check`` posts the file and the problem (``people.load_policy``'s words:
the path and the line, never the decoder's, which could quote a secret) once when the
file becomes unusable, and one line when it is usable again, so a file fixed and broken
again is told again.  It runs before every update the chat handles (the refusal and the
notice arrive together) and on a timer (nobody needs to write first).
"""

from __future__ import annotations

import logging
from typing import Callable

from aipager.bot import i18n
from aipager.bot.i18n import _
from aipager.bot.outbox import Outbox, Post
from aipager.clients.members import Members

log = logging.getLogger("aipager.bot")


def news(was_broken: bool, problem: str) -> str | None:
    """What changed: "broken" (the file became unusable), "fixed", or None."""
    if problem and not was_broken:
        return "broken"
    if not problem and was_broken:
        return "fixed"
    return None


class PolicyWatch:
    """Watches the policy file the chat's senders are resolved with.

    Args:
        members: the config's chat and members (the file is read as for a sender).
        outbox: where the line goes (the configured chat).
        problem: why the file cannot be used now, "" when it can (``Port.policy_problem``
            over the daemon's environment).
        locale: the chat's language (``i18n.chat_locale``).
    """

    def __init__(self, members: Members, outbox: Outbox, problem: Callable[[], str],
                 locale: Callable[[int], str]) -> None:
        self.members = members
        self.outbox = outbox
        self._problem = problem
        self._locale = locale
        #: whether the chat was told the file is unusable (and not yet that it is fixed)
        self.told_broken = False

    def check(self) -> None:
        problem = self._problem()
        change = news(self.told_broken, problem)
        if change is None:
            return
        self.told_broken = change == "broken"
        chat_id = self.members.current().chat_id
        with i18n.use(self._locale(chat_id)):
            if change == "broken":
                log.warning("told the chat the policy file cannot be used: %s", problem)
                text = _("⚠️ aipager's safety policy cannot be used: {problem}. Until it is "
                         "fixed, nobody but the owner may do anything here.").format(
                    problem=problem)
            else:
                text = _("✅ aipager's safety policy is usable again: members have their "
                         "rights back.")
        self.outbox.put(Post(chat_id, text, buzz=change == "broken"))


__all__ = ["PolicyWatch", "news"]
