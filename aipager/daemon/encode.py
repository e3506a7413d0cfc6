"""A message's encoding for its session, decided with this machine's policy.

``policy.chatprompt.encode`` does the encoding; this module supplies what only
the daemon knows: the sender's rights (from the note's role, with the floor
unless the role is exempt) and the session's folder, so an ``@`` mention is
attached only when a Read of it would be allowed for that sender.  On a hub
each host encodes for its own sessions with its own policy.  A policy that
cannot be read leaves every ``@`` inert (fails closed).
"""

from __future__ import annotations

from typing import Callable, Mapping

from aipager.agents import CLAUDE, Agent
from aipager.port.model import PromptNote
from aipager.policy import chatprompt
from aipager.proto import paths
from aipager.proto.errors import AipagerError


def encode(env: Mapping[str, str], text: str, note: PromptNote, *,
           cwd: str, agent: Agent = CLAUDE) -> chatprompt.Encoded:
    """The encoding of ``text`` sent by the note's author (``note``: the permission
    note: ``author_user_id``, ``author_label``, ``role``) for ``agent``'s
    input line: an agent other than Claude Code attaches no mention (its ``@`` is a
    picker whose choice no policy decided) and gets its own signs made inert.

    Raises:
        ValueError: nothing to send.
    """
    from aipager.policy import model

    role = note.role or "user"
    mention_ok = None
    try:
        if note.author_user_id is not None and agent is CLAUDE:
            # a note with nobody named grants no role (``policy.notes``): nothing attached
            policy = model.current_policy(env)
            # the task will be the sender's: their own uploads are theirs to name
            snap = None if policy.role(role).exempt else model.task_snapshot(
                policy, role, env, note.author_user_id)
            mention_ok = chatprompt.read_check(snap, cwd, paths.home(env))
    except (AipagerError, ValueError, OSError):
        mention_ok = None  # nothing can be decided: every @ inert
    return chatprompt.encode(text, label=note.author_label, role=role,
                             mention_ok=mention_ok, inert=agent.inert)


def reads(env: Mapping[str, str], role: str, user_id: int | None, *,
          cwd: str) -> Callable[[str], bool]:
    """What a task of ``role`` (``user_id``'s) may read, decided with this machine's
    policy as a mention is (``chatprompt.may_read``); a policy that cannot be read allows
    nothing."""
    from aipager.policy import model

    try:
        policy = model.current_policy(env)
        snap = None if policy.role(role).exempt else model.task_snapshot(
            policy, role, env, user_id)
    except (AipagerError, ValueError, OSError):
        return lambda _path: False
    return chatprompt.may_read(snap, cwd, paths.home(env))
