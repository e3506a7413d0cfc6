"""The shared policy case table (tests/cases/policy_cases.json), ready to run."""

from __future__ import annotations

import json
from pathlib import Path

from aipager.policy import floor, rules, snapshot

CASES_FILE = Path(__file__).resolve().parent.parent / "cases" / "policy_cases.json"
CASE_HOME = "/home/u"
CASE_CWD = "/home/u/proj"
#: the environment the table's floor is built for
CASE_ENV = {"HOME": CASE_HOME}


def load_cases() -> list[dict]:
    return json.loads(CASES_FILE.read_text("utf-8"))["cases"]


def case_snapshot(case: dict, env=None) -> dict:
    """The full snapshot a case describes (floor for ``env``, default CASE_ENV)."""
    spec = dict(case["rules"])
    with_floor = spec.pop("floor", False)
    rule_set = rules.empty()
    for key in rules.RULE_KEYS:
        if key in spec:
            rule_set[key] = spec.pop(key)
    person = spec.pop("uploads_of", None)
    if with_floor:
        the_floor = floor.builtin_floor(env or CASE_ENV)
        if person is not None:
            # a task of that person's alone (hookside.task_rules)
            the_floor = floor.own_uploads(the_floor, env or CASE_ENV, person)
        rule_set = rules.stricter(rule_set, the_floor)
    halted = spec.pop("halted", None)
    doc = snapshot.make(spec.pop("origin", "telegram"), spec.pop("exempt", False), rule_set)
    assert not spec, f"unknown rule keys in case {case['id']}: {spec}"
    doc = snapshot.normalise(doc)
    doc["halted"] = halted
    return doc


def case_event(case: dict) -> dict:
    event = {"hook_event_name": "PreToolUse", "cwd": CASE_CWD, "tool_use_id": "toolu_1"}
    event.update(case["event"])
    return event
