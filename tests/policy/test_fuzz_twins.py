"""Differential fuzz: the compiled matcher and the Python reference agree.

Hypothesis generates rules inside the portable dialect and ASCII inputs built
from the characters where glibc and Python ``re`` historically differ; every
comparison must give the same decision and the same reason.  Derandomized
with fixed example counts so the run is reproducible and its cost bounded
(about 32,000 comparisons in total).
"""

from __future__ import annotations

import json

import pytest

from aipager.proto.errors import PatternError
from aipager.policy import _match_py, dialect, floor, match, rules, snapshot

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.skipif(match._c is None, reason="compiled matcher not built")

HOME = "/home/u"
#: 200 x 60 regex comparisons + 2 x 200 x 50 decisions = 32,000 per run
SUBJECTS = 60
EVENTS = 50
FUZZ = settings(
    max_examples=200,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    # shrinking a 50-subject example takes minutes; the assertion names the input
    phases=[Phase.explicit, Phase.generate],
)

# -- regex generation ----------------------------------------------------------------

LIT = "abcAB xyz-_/.:=;&|0"
SUBJECT_CHARS = LIT + "\n\t$'\"\\()[]{}*+?^~`"


leaf = st.one_of(
    st.sampled_from(list("abcAB xz-_/=:;&0")),
    st.just("."),
    st.sampled_from(["\\w", "\\W", "\\s", "\\S", "\\.", "\\$", "\\(", "\\)", "\\/", "\\\\", "\\|", "\\*"]),
    st.sampled_from(["[abc]", "[^a]", "[a-c]", "[A-Z]", "[^ ]", "[-a]", "[a-]", "[.$]", "[;&|]", "[0-9_]"]),
)
quant = st.sampled_from(["", "", "", "*", "+", "?", "{2}", "{1,}", "{0,2}", "{1,3}"])


@st.composite
def regex(draw, depth=0):
    parts = []
    if draw(st.booleans()) and draw(st.integers(0, 3)) == 0:
        parts.append("^")
    for _ in range(draw(st.integers(1, 5))):
        if depth < 2 and draw(st.integers(0, 5)) == 0:
            branches = draw(st.lists(regex(depth=depth + 1), min_size=1, max_size=3))
            atom = "(" + "|".join(b.strip("^$") or "a" for b in branches) + ")"
        else:
            atom = draw(leaf)
        parts.append(atom + draw(quant))
        if draw(st.integers(0, 8)) == 0:
            parts.append("\\b")
    if draw(st.integers(0, 3)) == 0:
        parts.append("$")
    return "".join(parts)


def valid_regex(pattern: str) -> bool:
    try:
        dialect.check_regex(pattern)
    except PatternError:
        return False
    return True




def agree(snap: dict, events: list[dict]) -> None:
    """Every event gets the same answer from both twins (C never declines ASCII)."""
    snap_json = json.dumps(snap).encode()
    home = HOME.encode()
    for event in events:
        py = match.decide_py(snap, event, HOME)
        c = match._c.decide(snap_json, json.dumps(event).encode(), home)
        assert c == py, (snap, event)


def command_snap(patterns: list[str], icase: bool) -> dict:
    rule_set = rules.empty()
    rule_set["commands_i" if icase else "commands"] = patterns
    return snapshot.normalise(snapshot.make("telegram", False, rule_set))


def random_text(rnd, alphabet: str, pieces=None, size: int = 24) -> str:
    """Cheap bulk input from hypothesis' seeded Random (strategies are slow)."""
    if pieces:
        return "".join(rnd.choice(pieces) for _ in range(rnd.randrange(size)))
    return "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(size)))


@FUZZ
@given(pattern=regex().filter(valid_regex), icase=st.booleans(), rnd=st.randoms(use_true_random=False))
def test_regex_twins_agree(pattern, icase, rnd):
    # subjects built from the pattern's own literals hit far more matches
    own = [ch for ch in pattern if ch.isalnum() or ch in " -_/.:=;&|"] or ["a"]
    subjects = [random_text(rnd, SUBJECT_CHARS + "".join(own) * 3) for _ in range(SUBJECTS)]
    events = [{"cwd": "/w", "tool_name": "Bash", "tool_input": {"command": t}} for t in subjects]
    agree(command_snap([pattern], icase), events)
    # the prefilter never hides a match: every matching subject holds a needle
    needles = dialect.required_literals(pattern, icase)
    for text in subjects:
        if _match_py.regex_search(pattern, icase, text):
            assert _match_py.may_match(needles, text.translate(_match_py._FOLD) if icase else text), (
                pattern, needles, text)


# -- glob and whole-decision generation ------------------------------------------------

glob_piece = st.sampled_from(["a", "b", "/", ".", "*", "?", "[ab]", "[!a]", "[a-c]", "~", "x", ".claude", "/home/u"])
glob = st.lists(glob_piece, min_size=1, max_size=6).map("".join)


def valid_glob(pattern: str) -> bool:
    try:
        dialect.check_glob(pattern)
    except PatternError:
        return False
    return True


PATH_PIECES = ["a", "b", "/", ".", "..", "~", "x", ".claude", "home", "u", "ab", "*", "p", "/home/u"]


@st.composite
def snap_strategy(draw):
    rule_set = rules.empty()
    if draw(st.integers(0, 3)) == 0:
        rule_set["allowed_tools"] = draw(st.lists(st.sampled_from(["bash", "read", "grep", "glob"]), max_size=3))
    rule_set["denied_tools"] = draw(st.lists(st.sampled_from(["write", "webfetch", "ls"]), max_size=2))
    globs = st.lists(glob.filter(valid_glob), max_size=4)
    rule_set["no_access"] = draw(globs)
    rule_set["no_write"] = draw(globs)
    rule_set["commands"] = draw(st.lists(regex().filter(valid_regex), max_size=2))
    rule_set["commands_i"] = draw(st.lists(regex().filter(valid_regex), max_size=1))
    origin = draw(st.sampled_from(["telegram", "telegram", "unattributed", "terminal"]))
    return snapshot.normalise(snapshot.make(origin, draw(st.integers(0, 9)) == 0, rule_set))


def random_event(rnd) -> dict:
    tool_input = {}
    for key in ("file_path", "path", "filePath"):
        if rnd.randrange(3) == 0:
            tool_input[key] = random_text(rnd, "", PATH_PIECES, 7)
    if rnd.randrange(2):
        tool_input["command"] = random_text(rnd, SUBJECT_CHARS)
    if rnd.randrange(4) == 0:
        tool_input["pattern"] = random_text(rnd, "", PATH_PIECES, 7)
    cwd = rnd.choice(["/home/u/p", "/home/u", "/", "/home/u/.claude", "/tmp/x"])
    tool = rnd.choice(["Bash", "bash", "Read", "Write", "edit", "Grep", "Glob", "LS", "WebFetch", "MultiEdit"])
    return {"cwd": cwd, "tool_name": tool, "tool_input": tool_input}


@FUZZ
@given(snap=snap_strategy(), rnd=st.randoms(use_true_random=False))
def test_decision_twins_agree(snap, rnd):
    agree(snap, [random_event(rnd) for _ in range(EVENTS)])


# -- the built-in floor's secrets --------------------------------------------------

#: pieces of the paths and commands the floor's secrets are about (floor.SECRET_GLOBS,
#: its command patterns), so that random inputs land on and near them
SECRET_PIECES = ["/etc", "/shadow", "/gshadow", "-", ".bak", "/sudoers", ".d", "/ssh", "/ssh_host_",
                 "/proc", "/self", "/1", "/task", "/environ", "/root", "/home", "/bob", "/u",
                 "/.ssh", "/id_rsa", "/.aws", "/credentials", "/.netrc", "/.config", "/aipager",
                 "/.", "/..", "/", "~", "*", "'", "cat ", " ", ";", "|"]
FLOOR_SNAP = snapshot.normalise(snapshot.make("telegram", False, floor.builtin_floor({"HOME": HOME}),
                                              known=floor.KNOWN_NEEDLES))


def secret_event(rnd) -> dict:
    tool = rnd.choice(["Read", "Write", "Grep", "Glob", "Bash", "LS"])
    text = random_text(rnd, "", SECRET_PIECES, 9)
    key = {"Bash": "command", "Glob": "pattern", "Grep": "path", "LS": "path"}.get(tool, "file_path")
    cwd = rnd.choice(["/home/u/p", "/etc", "/root", "/proc/1", "/"])
    return {"cwd": cwd, "tool_name": tool, "tool_input": {key: text}}


@FUZZ
@given(rnd=st.randoms(use_true_random=False))
def test_floor_secret_twins_agree(rnd):
    agree(FLOOR_SNAP, [secret_event(rnd) for _ in range(EVENTS)])
