"""What a person's role lets them do, read from the owner's policy file: decided on the
daemon's side and handed to a client through its door (``port.door.Port.person``), so
no client loads the policy."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from aipager.port.who import Person
from aipager.proto import paths
from aipager.proto.errors import AipagerError, PatternError, PolicySchemaError

log = logging.getLogger("aipager.daemon")


def load_policy(env: Mapping[str, str]) -> Any:
    """The owner's policy, or why it is unusable (a string naming the file, fit for the
    chat); read again only when the file changed (``model.current_policy``)."""
    from aipager.policy import model

    try:
        return model.current_policy(env)
    except (PolicySchemaError, PatternError):
        # their words quote the file's values; the daemon's log has them (``floorwatch``)
        return (f"{paths.policy_user_file(env)} does not follow the policy's rules "
                "(`aipager policy check` lists what is wrong)")
    except AipagerError as exc:
        return str(exc)  # fsio's words: the file and the line, never the decoder's


def policy_problem(env: Mapping[str, str]) -> str:
    """Why the owner's policy file cannot be used ("" when it can), as ``load_policy``."""
    policy = load_policy(env)
    return policy if isinstance(policy, str) else ""


def with_rights(policy: Any, user_id: int | None, label: str, role_name: str, *,
                raw_keys: bool = False) -> Person:
    """The sender with what their role lets them do (``policy``: a loaded policy, or why
    it is unusable).  ``raw_keys`` counts only for the owner."""
    try:
        if isinstance(policy, str):
            raise AipagerError(policy)
        role = policy.role(role_name)
    except AipagerError as exc:
        if role_name != "owner":
            # Unusable policy or unknown role: no rights rather than guessed ones.
            log.error("role %r of %s cannot be resolved (%s): no rights", role_name, label, exc)
            return Person(user_id, label, role_name, False, False, False,
                          policy_unusable=isinstance(policy, str))
        return Person(user_id, label, role_name, never_held=True)
    # Raw keystrokes (``!cmd``, Claude Code's own commands) only ever for an owner
    # who opted in: they pass no check at all.
    return Person(user_id, label, role_name, role.may_prompt, role.may_approve,
                  role.may_manage, exempt=role.exempt, raw_keys=raw_keys and role_name == "owner",
                  never_held=role_name == "owner")


__all__ = ["load_policy", "policy_problem", "with_rights"]
