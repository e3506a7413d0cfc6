"""Rule sets as plain dicts: the shape notes, the floor file and snapshots share.

A rule set is a dict with exactly ``RULE_KEYS``::

    allowed_tools  None (any tool) or a list of lower-case tool names
    denied_tools   lower-case tool names
    no_access      path globs (absolute once ``~`` is expanded)
    no_write       path globs
    commands       dialect regexes, case-sensitive
    commands_i     dialect regexes, case-insensitive

Combining two rule sets always gives the stricter one: deny lists are
united, allow lists intersected.  Builtins only (hook hot path).
"""

from __future__ import annotations

LIST_KEYS = ("denied_tools", "no_access", "no_write", "commands", "commands_i")
RULE_KEYS = ("allowed_tools",) + LIST_KEYS


def empty() -> dict:
    """A rule set that restricts nothing."""
    rules: dict = {key: [] for key in LIST_KEYS}
    rules["allowed_tools"] = None
    return rules


def _union(a: list, b: list) -> list:
    out = list(a)
    # a set for the membership test: a role with thousands of globs must not
    # make the hook's pick-up quadratic
    seen = set(out)
    for item in b:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def stricter(a: dict, b: dict) -> dict:
    """The rule set that denies whatever either ``a`` or ``b`` denies."""
    out: dict[str, list | None] = {key: _union(a[key], b[key]) for key in LIST_KEYS}
    allow_a, allow_b = a["allowed_tools"], b["allowed_tools"]
    if allow_a is None:
        out["allowed_tools"] = None if allow_b is None else list(allow_b)
    elif allow_b is None:
        out["allowed_tools"] = list(allow_a)
    else:
        # an empty intersection stays an (empty) allow list: it denies every tool
        out["allowed_tools"] = [tool for tool in allow_a if tool in allow_b]
    return out


def expand_glob(glob: str, home: str) -> list[str]:
    """``~`` to ``home``; ``X/**`` also covers the folder ``X`` itself.

    Both matchers then only run plain whole-string globs, so this is the one
    place where the folder convention lives.
    """
    if home and (glob == "~" or glob.startswith("~/")):
        glob = home.rstrip("/") + glob[1:]
    if glob.endswith("/**") and len(glob) > 3:
        return [glob[:-3], glob[:-1]]
    return [glob]


def check_shape(rules) -> dict:
    """Return ``rules`` if it has the rule-set shape; raise ValueError if not."""
    if not isinstance(rules, dict):
        msg = "rule set is not an object"
        raise ValueError(msg)
    allowed = rules.get("allowed_tools")
    if allowed is not None and not _strings(allowed):
        msg = "allowed_tools is not a list of strings"
        raise ValueError(msg)
    for key in LIST_KEYS:
        if not _strings(rules.get(key)):
            msg = f"{key} is not a list of strings"
            raise ValueError(msg)
    return rules


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
