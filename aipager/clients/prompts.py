"""A person's message as every surface shows it.

How a message becomes a prompt (held, typed with its permission note, audited) is the
service's (``daemon.service``, ``SendPrompt``); nothing is filtered for what Claude
Code's input line might read in it: the daemon encodes it (``policy.chatprompt``).
"""

from __future__ import annotations

from aipager.policy import chatprompt


def words(text: str) -> str:
    """What a message says, as it is shown and sent: control bytes removed, trimmed."""
    return chatprompt.clean(text).strip()


__all__ = ["words"]
