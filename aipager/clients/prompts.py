"""A person's message becomes a prompt: checked, held or typed with its permission note.

Every client (the chat, the web page) hands a message to a session the same way,
so the rights it carries are the same whichever way it came:

1. ``words``: the text as shown; nothing is filtered for what Claude Code's input
   line might read in it: the daemon encodes it (``policy.chatprompt``).
2. ``hold``: another person's running task, or an open dialog, makes it wait
   (``DaemonPort.queue_chat_message(held=True)``; a ``release`` output says when).
3. ``type_with_note``: queued, its permission note written (sender, role, the exact
   encoding typed: ``policy.notes``) and typed as one paste by the daemon; audited.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from aipager.locales import N_
from aipager.clients.people import Sender, author_label, task_authors
from aipager.daemon.model import Session, State
from aipager.daemon.port import DaemonPort, Who
from aipager.proto.errors import AipagerError
from aipager.policy import chatprompt


def words(text: str) -> str:
    """What a message says, as it is shown and sent: control bytes removed, trimmed.

    Nothing is refused for what Claude Code's input line might make of it: the daemon
    types every message in one encoded form that line reads only as the person's words
    (``policy.chatprompt``, ``DaemonPort.type_prompt``)."""
    return chatprompt.clean(text).strip()


def author(sender: Sender) -> dict[str, Any]:
    """Who a message is from, as its note and the task's authors name them."""
    return {"user_id": sender.user_id, "label": sender.label, "role": sender.role}


def hold(sess: Session, sender: Sender,
         tr: Callable[[str], str] = N_) -> tuple[str, str] | None:
    """Why the message must wait and for what (``task`` or ``dialog``), or None: type now.

    Each task keeps the rights of one author: another person's message waits for the
    task to end; text typed while Claude shows a dialog would answer it.  ``tr``: the
    caller's translator (English without one).
    """
    if (sess.state in (State.WORKING, State.WAITING) and sender.role != "owner"
            and sender.user_id not in task_authors(sess)):
        return tr(N_("⏳ queued after {author}'s task in {session}")).format(
            author=tr(author_label(sess)), session=sess.label), "task"
    if sess.state == State.WAITING:
        return tr(N_("⏳ Held for {session}: Claude is waiting for an answer above; "
                     "this goes in when that is settled.")).format(session=sess.label), "dialog"
    return None


def note(msg_id: int, chat_id: int, text: str, who: Mapping[str, Any],
         style: str | None = None) -> dict[str, Any]:
    """The permission note of a message (``policy.notes.write_note``'s arguments)."""
    return {"msg_id": msg_id, "chat_id": chat_id, "author_user_id": who.get("user_id"),
            "author_label": who.get("label", ""), "role": who.get("role", "user"),
            "text": text, "style": style, "reply_to": who.get("reply_to")}


async def type_with_note(port: DaemonPort, session: str, msg_id: int, chat_id: int, text: str,
                         who: Mapping[str, Any], *, style: str | None = None,
                         queued: bool = False, acting: Callable[[], Any] = lambda: None) -> None:
    """Type ``text`` into ``session`` with its permission note, and audit it.

    Args:
        who: ``author(sender)`` (plus ``reply_to`` for a reply); its rights go with the text.
        queued: the daemon already holds it (a released message): not queued again.
        acting: called once the message is pasted, right before its Enter (the chat marks
            its update handled there: ``DaemonPort.type_prompt``'s ``submitting``).

    Raises:
        AipagerError, ValueError, OSError: not typed (the queued message is dropped again).
    """
    if not queued:
        port.queue_chat_message(session, msg_id, text, chat_id=chat_id,
                                sender=who.get("label", ""))
    try:
        await port.type_prompt(session, text,
                               note=note(msg_id, chat_id, text, who, style), submitting=acting)
    except (AipagerError, ValueError, OSError):
        port.drop_chat_message(session, msg_id)
        raise
    port.audit_action("chat_prompt", Who(str(who.get("label", "")), who.get("user_id"),
                                         str(who.get("role", ""))),
                      session=session, msg_id=msg_id, chat_id=chat_id)


__all__ = ["author", "hold", "note", "type_with_note", "words"]
