"""Differential fuzz of reply datagrams: the native hook and the twin accept the
same replies and print the same bytes, for a PermissionRequest's decision and
for an Elicitation's answer to a form (tests/hook/test_permission_reply.py and
test_elicitation_reply.py hold the named cases; support/replyrun.py the fake daemon).

Each drawn reply is followed by a sentinel reply, so a rejected one costs no
wait: the output shows which of the two the hook took.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.mutation import mutate
from support.replyrun import answered, elicit, elicitation_bytes, reply, short_instance_dir

from aipager.hookpy import reply as hook_reply

__all__ = ["short_instance_dir"]  # the autouse fixture, imported to apply here

RID = "@RID@"
SENTINEL = {"behavior": "deny", "message": "sentinel"}
FORM_SENTINEL = {"action": "accept", "content": {"sentinel": True}}

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=15,
)
# mostly well-typed decisions (so many are accepted), with every kind of wrong one mixed in
good = st.fixed_dictionaries({"behavior": st.sampled_from(["allow", "deny"])}, optional={
    "updatedInput": st.dictionaries(st.text(max_size=8), values, max_size=4),
    "updatedPermissions": st.lists(values, max_size=4),
    "message": st.text(max_size=30),
    "interrupt": st.booleans(),
})
odd = st.fixed_dictionaries({}, optional={
    "behavior": st.one_of(st.sampled_from(["allow", "deny", "ask", "Allow"]), values),
    "updatedPermissions": values,
    "message": values,
    "interrupt": values,
    "updatedInput": values,
})
members = st.one_of(good, good, good, odd)
# an answer to a form: mostly well-typed, content mostly only with "accept"
good_form = st.one_of(
    st.fixed_dictionaries({"action": st.just("accept")},
                          optional={"content": st.dictionaries(st.text(max_size=8), values, max_size=4)}),
    st.fixed_dictionaries({"action": st.sampled_from(["decline", "cancel"])}),
)
odd_form = st.fixed_dictionaries({}, optional={
    "action": st.one_of(st.sampled_from(["accept", "decline", "cancel", "Accept", "allow", ""]), values),
    "content": values,
    "behavior": st.sampled_from(["allow", "deny"]),
})
forms = st.one_of(good_form, good_form, good_form, odd_form)
top_level = {"v": st.sampled_from([1, 1, 1, 1, 1, 2, 1.0, True, "1"]),
             "request_id": st.sampled_from([RID] * 6 + ["x"]), "other": values}
docs = st.fixed_dictionaries(
    {"decision": st.one_of(members, members, members, values)},
    # an answer to a form beside the decision is not looked at
    optional={**top_level, "elicitation": forms},
)
# for an Elicitation: sometimes a decision instead of, or beside, the answer
form_docs = st.one_of(
    st.fixed_dictionaries({"elicitation": st.one_of(forms, forms, forms, values)},
                          optional={**top_level, "decision": members}),
    st.fixed_dictionaries({"decision": members}, optional=top_level),
)
layouts = st.sampled_from([
    {"separators": (",", ":")},
    {"indent": 2},
    {"ensure_ascii": False},
    {"separators": (" , ", " : "), "ensure_ascii": False},
])

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _both(template: bytes) -> tuple[bytes, bytes]:
    outs = []
    for kind in ("native", "twin"):
        done = answered(kind, lambda ev: [template.replace(RID.encode(), ev["aipager_request_id"].encode()),
                                          reply(ev["aipager_request_id"], SENTINEL)])
        outs.append(done.stdout)
    # whatever was taken is valid JSON Claude Code can read
    assert json.loads(outs[0])["hookSpecificOutput"]["decision"]["behavior"] in ("allow", "deny")
    return outs[0], outs[1]


@SETTINGS
@given(doc=docs, layout=layouts)
def test_drawn_replies_agree(native_bins, doc: dict, layout: dict) -> None:
    doc.setdefault("v", 1)
    doc.setdefault("request_id", RID)
    native, twin = _both(json.dumps(doc, **layout).encode("utf-8", "surrogatepass"))
    assert native == twin and native


@SETTINGS
@given(doc=members, data=st.data())
def test_mutated_replies_agree(native_bins, doc: dict, data) -> None:
    native, twin = _both(mutate(json.dumps({"v": 1, "request_id": RID, "decision": doc}).encode(), data))
    assert native == twin and native


def _both_forms(template: bytes) -> tuple[bytes, bytes]:
    outs = []
    for kind in ("native", "twin"):
        done = answered(kind, lambda ev: [template.replace(RID.encode(), ev["aipager_request_id"].encode()),
                                          elicit(ev["aipager_request_id"], FORM_SENTINEL)],
                        stdin=elicitation_bytes(), var=hook_reply.ELICITATION_VAR)
        outs.append(done.stdout)
    # whatever was taken is valid JSON Claude Code can read, of the form's own shape
    out = json.loads(outs[0])["hookSpecificOutput"]
    assert out["hookEventName"] == "Elicitation" and out["action"] in ("accept", "decline", "cancel")
    assert set(out) <= {"hookEventName", "action", "content"}
    assert "content" not in out or (out["action"] == "accept" and isinstance(out["content"], dict))
    return outs[0], outs[1]


@SETTINGS
@given(doc=form_docs, layout=layouts)
def test_drawn_form_answers_agree(native_bins, doc: dict, layout: dict) -> None:
    doc.setdefault("v", 1)
    doc.setdefault("request_id", RID)
    native, twin = _both_forms(json.dumps(doc, **layout).encode("utf-8", "surrogatepass"))
    assert native == twin and native


@SETTINGS
@given(doc=forms, data=st.data())
def test_mutated_form_answers_agree(native_bins, doc: dict, data) -> None:
    native, twin = _both_forms(mutate(json.dumps({"v": 1, "request_id": RID, "elicitation": doc}).encode(), data))
    assert native == twin and native
