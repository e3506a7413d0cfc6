"""The chat's dialog keys are the ones measured on the real TUI (tests/fixtures/tui_keys.json,
proven by tests/e2e/test_tui_keys.py): expand the fixture's steps and compare."""

from __future__ import annotations

import pytest

from support.tuikeys import KEYS, expand

from aipager.daemon import dialogkeys as dk

@pytest.mark.parametrize("kind", ["allow", "allow_always", "deny"])
def test_permission_keys(kind):
    assert dk.permission(kind) == expand(KEYS["permission"]["actions"][kind]["steps"], {})


def _q(n, multi=False):
    return dk.Question("q", tuple(f"o{i}" for i in range(n)), multi)


SINGLE, MULTI, REVIEW = KEYS["question"]["single_select"], KEYS["question"]["multi_select"], \
    KEYS["question"]["review"]["submit"]["steps"]


@pytest.mark.parametrize("i", [0, 1, 2])
def test_one_single_select_question(i):
    keys = dk.questions([_q(3)], [dk.Answer([i])])
    assert keys == expand(SINGLE["pick"]["steps"], {"i": i})


def test_one_question_answered_in_words():
    keys = dk.questions([_q(3)], [dk.Answer([], "blue, please")])
    assert keys == expand(SINGLE["type"]["steps"], {"n": 3, "text": "blue, please"})


def test_multi_select_toggles_then_review():
    keys = dk.questions([_q(3, True)], [dk.Answer([0, 2])])
    assert keys == (expand(MULTI["toggle"]["steps"], {"picks": [0, 2]})
                    + expand(MULTI["next"]["steps"], {}) + expand(REVIEW, {}))


def test_multi_select_with_words():
    keys = dk.questions([_q(3, True)], [dk.Answer([1], "and more")])
    assert keys == (expand(MULTI["toggle"]["steps"], {"picks": [1]})
                    + expand(MULTI["type"]["steps"], {"n": 3, "text": "and more"})
                    + expand(MULTI["next_from_text"]["steps"], {}) + expand(REVIEW, {}))


def test_two_questions_step_through_and_submit():
    keys = dk.questions([_q(2), _q(3)], [dk.Answer([1]), dk.Answer([0])])
    assert keys == (expand(SINGLE["pick"]["steps"], {"i": 1})
                    + expand(SINGLE["pick"]["steps"], {"i": 0}) + expand(REVIEW, {}))


def test_typed_words_never_submit_early():
    keys = dk.questions([_q(2)], [dk.Answer([], "line one\r\nline two")])
    assert b"\r" not in keys[-2] and b"\n" not in keys[-2]


def test_decline():
    assert dk.decline() == expand(KEYS["question"]["actions"]["decline"]["steps"], {})
