"""Roles and the owner's policy file (daemon and CLI side).

The file ``paths.policy_user_file`` is validated against ``schema.json``;
built-in roles are adjusted per field, custom roles extend a built-in one,
and ``floor`` entries are added to the built-in floor.  ``role_rules`` turns
a role into the rule set a permission note carries (without the floor, which
the hook adds when it picks the note up).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace

from aipager.proto import fsio, paths
from aipager.proto.errors import PolicyError, PolicySchemaError
from aipager.proto.fsnames import Stamp, file_stamp
from aipager.policy import floor as floor_mod
from aipager.policy import rules, validate

#: fields of a role in schema.json, in the schema's order
ROLE_FIELDS = (
    "extends",
    "may_prompt",
    "may_approve",
    "may_manage",
    "bypasses_role_denies",
    "allowed_tools",
    "denied_tools",
    "no_access_paths",
    "no_write_paths",
    "denied_commands",
)

#: fields of the floor additions in schema.json
FLOOR_FIELDS = ("no_access_paths", "no_write_paths", "denied_commands")

BUILTIN_ROLES = ("owner", "admin", "user", "read_only")


@dataclass(frozen=True)
class Role:
    """A role: what its members may do in the chat and what their tasks may do.

    ``exempt`` (owner only) lifts the floor; ``bypasses_role_denies`` ignores
    the role's own restrictions, leaving the floor.
    """

    name: str
    may_prompt: bool = True
    may_approve: bool = False
    may_manage: bool = False
    bypasses_role_denies: bool = False
    exempt: bool = False
    allowed_tools: tuple[str, ...] | None = None
    denied_tools: tuple[str, ...] = ()
    no_access_paths: tuple[str, ...] = ()
    no_write_paths: tuple[str, ...] = ()
    #: (regex, ignore_case) pairs
    denied_commands: tuple[tuple[str, bool], ...] = ()


def _builtins() -> dict[str, Role]:
    return {
        "owner": Role(
            "owner", may_approve=True, may_manage=True, bypasses_role_denies=True, exempt=True
        ),
        "admin": Role("admin", may_approve=True, may_manage=True, bypasses_role_denies=True),
        "user": Role(
            "user",
            may_approve=True,
            denied_tools=floor_mod.RESTRICTED_TOOLS,
            no_access_paths=floor_mod.CREDENTIAL_PATHS,
        ),
        "read_only": Role(
            "read_only",
            may_prompt=False,
            denied_tools=floor_mod.RESTRICTED_TOOLS + floor_mod.WRITE_TOOLS,
            no_access_paths=floor_mod.CREDENTIAL_PATHS,
        ),
    }


def _commands(items) -> tuple[tuple[str, bool], ...]:
    out = []
    for item in items:
        if isinstance(item, str):
            out.append((item, False))
        else:
            out.append((item["regex"], bool(item.get("ignore_case", False))))
    return tuple(out)


def _lower_tools(items) -> tuple[str, ...]:
    return tuple(rules_lower(t) for t in items)


def rules_lower(tool: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in tool)


def _apply(role: Role, spec: dict) -> Role:
    changes = {}
    for key in ("may_prompt", "may_approve", "may_manage", "bypasses_role_denies"):
        if key in spec:
            changes[key] = spec[key]
    if "allowed_tools" in spec:
        allowed = spec["allowed_tools"]
        changes["allowed_tools"] = None if allowed is None else _lower_tools(allowed)
    if "denied_tools" in spec:
        changes["denied_tools"] = _lower_tools(spec["denied_tools"])
    for key in ("no_access_paths", "no_write_paths"):
        if key in spec:
            changes[key] = tuple(spec[key])
    if "denied_commands" in spec:
        changes["denied_commands"] = _commands(spec["denied_commands"])
    return replace(role, **changes)


@dataclass(frozen=True)
class Policy:
    """The owner's policy: every role by name, plus additions to the floor."""

    roles: dict[str, Role] = field(default_factory=_builtins)
    floor_no_access: tuple[str, ...] = ()
    floor_no_write: tuple[str, ...] = ()
    floor_commands: tuple[tuple[str, bool], ...] = ()

    def role(self, name: str) -> Role:
        """The role called ``name``.

        Raises:
            PolicyError: no such role.
        """
        try:
            return self.roles[name]
        except KeyError:
            msg = f"unknown role {name!r} (known: {', '.join(sorted(self.roles))})"
            raise PolicyError(msg) from None


def from_document(doc: dict, source: str = "policy") -> Policy:
    """Build a Policy from a decoded policy document.

    Raises:
        PolicySchemaError: the document breaks ``schema.json``.
        PatternError: a pattern is outside the portable dialect.
    """
    validate.validate(doc, source=source)
    roles = _builtins()
    for name, spec in doc.get("roles", {}).items():
        if name in roles:
            base = roles[name]
            if "extends" in spec:
                msg = f"{source}: roles.{name}: a built-in role cannot use 'extends'"
                raise PolicySchemaError(msg)
        else:
            base = replace(roles[spec.get("extends", "user")], name=name, exempt=False)
        roles[name] = _apply(base, spec)
    extra = doc.get("floor", {})
    return Policy(
        roles=roles,
        floor_no_access=tuple(extra.get("no_access_paths", ())),
        floor_no_write=tuple(extra.get("no_write_paths", ())),
        floor_commands=_commands(extra.get("denied_commands", ())),
    )


def load_policy(env) -> Policy:
    """The owner's policy file, or the built-in roles when there is none.

    Raises:
        PolicyError: the file exists but cannot be read or decoded.
        PolicySchemaError / PatternError: as ``from_document``.
    """
    path = paths.policy_user_file(env)
    try:
        doc = fsio.read_json_file(path, PolicyError)
    except FileNotFoundError:
        return Policy()
    return from_document(doc, source=path)


#: policy file path -> (its version, the Policy read from it)
_loaded: dict[str, tuple[Stamp, Policy]] = {}


def current_policy(env) -> Policy:
    """``load_policy``, read again only when the file's version (inode, mtime_ns,
    size) changed: a chat prompt checks its sender's rights without parsing and
    validating the file each time, and an edit still counts from the next prompt.

    Raises:
        As ``load_policy`` (an unusable file is not remembered: it is read again).
    """
    path = paths.policy_user_file(env)
    stamp = file_stamp(path)
    known = _loaded.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    policy = load_policy(env)
    # the version seen before reading: an edit landing mid-read is read again next time
    _loaded[path] = (stamp, policy)
    return policy


def _command_lists(pairs) -> tuple[list[str], list[str]]:
    sensitive = [p for p, icase in pairs if not icase]
    insensitive = [p for p, icase in pairs if icase]
    return sensitive, insensitive


def role_rules(role: Role, env) -> dict:
    """The rule set of ``role`` alone (no floor), ``~`` expanded for ``env``."""
    out = rules.empty()
    if role.exempt or role.bypasses_role_denies:
        return out
    home = paths.home(env)
    out["allowed_tools"] = None if role.allowed_tools is None else list(role.allowed_tools)
    out["denied_tools"] = list(role.denied_tools)
    out["no_access"] = floor_mod.expand_all(role.no_access_paths, home)
    out["no_write"] = floor_mod.expand_all(role.no_write_paths, home)
    out["commands"], out["commands_i"] = _command_lists(role.denied_commands)
    return out


def task_snapshot(policy: Policy, role_name: str, env, user_id: int | None = None) -> dict:
    """The snapshot a task of ``role_name`` runs under (its rules plus the floor,
    unless the role is exempt), normalised for ``_match_py.decide``: what
    ``aipager policy explain`` decides against, and what the chat checks an
    @-mention with before typing it.  ``user_id``: the task is that person's alone,
    so it reads their own uploads (``floor.own_uploads``, as the hook's pick-up
    grants them)."""
    from aipager.policy import snapshot

    the_role = policy.role(role_name)
    task = role_rules(the_role, env)
    if not the_role.exempt:
        the_floor = effective_floor(policy, env)
        person = floor_mod.uploads_person([(user_id, False)])
        if person is not None:
            the_floor = floor_mod.own_uploads(the_floor, env, person)
        task = rules.stricter(task, the_floor)
    return snapshot.normalise(snapshot.make("telegram", the_role.exempt, task))


def effective_floor(policy: Policy, env) -> dict:
    """Built-in floor plus the owner's additions, ready for ``publish_floor``."""
    home = paths.home(env)
    extra = rules.empty()
    extra["no_access"] = floor_mod.expand_all(policy.floor_no_access + config_secrets(env), home)
    extra["no_write"] = floor_mod.expand_all(policy.floor_no_write, home)
    extra["commands"], extra["commands_i"] = _command_lists(policy.floor_commands)
    return rules.stricter(floor_mod.builtin_floor(env), extra)


def config_secrets(env) -> tuple[str, ...]:
    """Globs for the files aipager's config and state name that hold secrets outside its
    own folders (the floor covers those), as named and as resolved: the hub credential
    a hub connects with (the config's ``hub.creds``) and the one a host joined with
    (``paths.joined_hub_file``, recorded by ``aipager start --join``).  A file that
    cannot be read names nothing."""
    found: list[str] = []
    for path in (paths.config_file(env), paths.joined_hub_file(env)):
        doc = _json_object(path)
        hub = doc.get("hub") if path == paths.config_file(env) else doc
        creds = hub.get("creds") if isinstance(hub, dict) else None
        if not isinstance(creds, str) or not (creds.startswith("/") or creds.startswith("~/")):
            continue
        named = paths.home(env) + creds[1:] if creds.startswith("~/") else creds
        found += (named, os.path.realpath(named))
    return tuple(_glob_literal(p) for p in dict.fromkeys(found))


def _json_object(path: str) -> dict:
    """The JSON object in ``path``, or {} when there is none to read."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _glob_literal(path: str) -> str:
    """A glob that matches exactly ``path`` (its wildcard characters in sets)."""
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in path)


def publish(env, policy: Policy | None = None) -> str:
    """Load (or take) the policy and publish its floor for the hook; daemon start-up."""
    policy = policy or load_policy(env)
    return floor_mod.publish_floor(env, effective_floor(policy, env))


__all__ = ["Policy", "Role", "load_policy", "current_policy", "from_document", "role_rules", "effective_floor"]
