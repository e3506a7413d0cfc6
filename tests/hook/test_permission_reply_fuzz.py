"""Differential fuzz of reply datagrams: the native hook and the twin accept the
same replies and print the same bytes (tests/hook/test_permission_reply.py
holds the named cases and the fake daemon).

Each drawn reply is followed by a sentinel reply, so a rejected one costs no
wait: the output shows which of the two the hook took.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.mutation import mutate
from support.replyrun import answered, reply, short_instance_dir

__all__ = ["short_instance_dir"]  # the autouse fixture, imported to apply here

RID = "@RID@"
SENTINEL = {"behavior": "deny", "message": "sentinel"}

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
docs = st.fixed_dictionaries(
    {"decision": st.one_of(members, members, members, values)},
    optional={"v": st.sampled_from([1, 1, 1, 1, 1, 2, 1.0, True, "1"]),
              "request_id": st.sampled_from([RID] * 6 + ["x"]), "other": values},
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
