"""The shared (rules, event) -> decision table through both matchers."""

from __future__ import annotations

import pytest
from support.policy_cases import CASE_HOME, case_event, case_snapshot, load_cases

from aipager.policy import _match_py, match

CASES = load_cases()
ENGINES = ["py"] + (["c"] if match._c is not None else [])


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


def run(engine: str, case: dict):
    snap = case_snapshot(case)
    event = case_event(case)
    if engine == "py":
        return match.decide_py(snap, event, CASE_HOME)
    return match.decide(snap, event, CASE_HOME, engine="c")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(engine, case):
    if case["expect"] == "error":
        with pytest.raises(_match_py.BadInput):
            run(engine, case)
        return
    decision, reason = run(engine, case)
    assert decision == case["expect"], reason
    if "reason" in case:
        assert case["reason"] in reason


def test_ids_are_unique():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.skipif(match._c is None, reason="compiled matcher not built (AIPAGER_NO_EXTENSIONS or no compiler)")
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_c_decides_itself_or_declines_as_listed(case):
    """The C twin must decide every ASCII case itself, not lean on the fallback."""
    decision, reason = match.decide_c(case_snapshot(case), case_event(case), CASE_HOME)
    if case.get("c") == "decline":
        assert decision == match.DECLINED
    else:
        assert decision == case["expect"], reason
        assert reason == match.decide_py(case_snapshot(case), case_event(case), CASE_HOME)[1]
