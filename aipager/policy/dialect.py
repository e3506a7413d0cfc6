"""The portable pattern dialect that both matchers honour identically.

The compiled hook evaluates rules with glibc ``regcomp(REG_EXTENDED)`` and
``fnmatch(FNM_NOESCAPE)``; the Python twin uses ``re`` and ``fnmatchcase``.
The two engines disagree on many constructs (measured in
``shared/notes/hook-build.md`` §D), so a rule is only accepted when it stays
inside the subset where they agree.  Rejecting at load time, with a message
naming the rule and the construct, beats a silent difference at enforcement.

Regex (search semantics): printable ASCII literals, ``.``, bracket sets
``[...]``/``[^...]`` of literal members and ranges, ``* + ? {m} {m,} {m,n}``
after an atom (never stacked, never lazy), groups, ``|``, ``^``, ``$`` and the
escapes listed in ``REGEX_ESCAPES``.

Glob (whole-subject match): printable ASCII literals, ``*``, ``?``,
``[...]``/``[!...]`` of literal members and ranges.
"""

from __future__ import annotations

from aipager.proto.errors import PatternError

#: escapes both engines read the same way (GNU regcomp treats ``\\/`` as '/').
#: ``\\B`` is left out: glibc matches it in an empty string, Python never does.
REGEX_ESCAPES = frozenset(".\\()[]{}*+?|^$/wWsSb")

#: escapes that match a character (may take a quantifier); \\b does not
_ATOM_ESCAPES = frozenset(".\\()[]{}*+?|^$/wWsS")

#: glibc's RE_DUP_MAX is 0x7fff; keep well under it and under Python's limits
MAX_REPEAT = 255

#: longest pattern accepted; the hook copies patterns into fixed buffers
MAX_PATTERN = 1024


def _fail(rule: str, pattern: str, construct: str) -> PatternError:
    msg = f"{rule}: pattern {pattern!r} uses {construct}, which is outside the portable dialect"
    return PatternError(msg)


def _check_chars(pattern: str, rule: str) -> None:
    if not pattern:
        raise _fail(rule, pattern, "an empty pattern")
    if len(pattern) > MAX_PATTERN:
        raise _fail(rule, pattern[:40] + "...", f"more than {MAX_PATTERN} characters")
    for ch in pattern:
        if not (" " <= ch <= "~"):
            raise _fail(rule, pattern, f"the character {ch!r} (only printable ASCII is portable)")


def _bracket(pattern: str, i: int, rule: str, negators: str) -> int:
    """Check the bracket set opening at ``pattern[i]``; return the index after it."""
    j = i + 1
    if j < len(pattern) and pattern[j] in negators:
        j += 1
    elif j < len(pattern) and pattern[j] in "^!":
        # '[^' in a glob or '[!' in a regex: the engines read them differently
        raise _fail(rule, pattern, f"'[{pattern[j]}' (write the negation as '[{negators}')")
    start = j
    members: list[str] = []
    while True:
        if j >= len(pattern):
            raise _fail(rule, pattern, "an unclosed '['")
        ch = pattern[j]
        if ch == "]":
            break
        if ch == "\\":
            raise _fail(rule, pattern, "a backslash inside brackets")
        if ch == "[":
            raise _fail(rule, pattern, "'[' inside brackets (POSIX classes are not portable)")
        members.append(ch)
        j += 1
    if j == start:
        raise _fail(rule, pattern, "an empty bracket set")
    _check_ranges(members, pattern, rule)
    return j + 1


def _check_ranges(members: list[str], pattern: str, rule: str) -> None:
    k = 0
    while k < len(members):
        if k + 2 < len(members) and members[k + 1] == "-":
            lo, hi = members[k], members[k + 2]
            if "-" in (lo, hi):
                raise _fail(rule, pattern, "a range that starts or ends with '-'")
            if lo > hi:
                raise _fail(rule, pattern, f"the reversed range '{lo}-{hi}'")
            k += 3
            continue
        k += 1


def check_glob(pattern: str, rule: str = "glob") -> None:
    """Reject a path glob outside the portable dialect.

    Args:
        pattern: the glob as written by the owner (``~`` already expanded or not).
        rule: where the pattern sits, used in the error message.

    Raises:
        PatternError: naming the rule and the offending construct.
    """
    _check_chars(pattern, rule)
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            raise _fail(rule, pattern, "a backslash")
        if ch == "[":
            i = _bracket(pattern, i, rule, "!")
            continue
        if ch == "]":
            raise _fail(rule, pattern, "an unmatched ']'")
        i += 1


def _interval(pattern: str, i: int, rule: str) -> int:
    """Check ``{m}``, ``{m,}`` or ``{m,n}`` at ``pattern[i]``; return the index after it."""
    close = pattern.find("}", i)
    if close < 0:
        raise _fail(rule, pattern, "an unclosed '{' (escape a literal brace as '\\{')")
    body = pattern[i + 1 : close]
    lo, comma, hi = body.partition(",")
    if not lo.isdigit() or (hi and not hi.isdigit()):
        raise _fail(rule, pattern, f"the interval '{{{body}}}'")
    if int(lo) > MAX_REPEAT or (hi and int(hi) > MAX_REPEAT):
        raise _fail(rule, pattern, f"a repeat count above {MAX_REPEAT}")
    if hi and int(lo) > int(hi):
        raise _fail(rule, pattern, f"the reversed interval '{{{body}}}'")
    del comma
    return close + 1


def check_regex(pattern: str, rule: str = "regex") -> None:
    """Reject a command regex outside the portable dialect.

    Args:
        pattern: the extended regular expression as written by the owner.
        rule: where the pattern sits, used in the error message.

    Raises:
        PatternError: naming the rule and the offending construct.
    """
    _check_chars(pattern, rule)
    depth = 0
    # per open group: does it hold an anchor?  glibc mis-matches quantified
    # groups with anchors inside, e.g. (a\b){2} (found by the twin fuzz)
    anchored: list[bool] = []
    # what the previous token was: "start" (nothing quantifiable before),
    # "atom" (may take a quantifier), "quant" (just quantified), "anchor"
    prev = "start"
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                raise _fail(rule, pattern, "a trailing backslash")
            esc = pattern[i + 1]
            if esc not in REGEX_ESCAPES:
                raise _fail(rule, pattern, f"the escape '\\{esc}'")
            prev = "atom" if esc in _ATOM_ESCAPES else "anchor"
            if prev == "anchor" and anchored:
                anchored[-1] = True
            i += 2
            continue
        if ch in "*+?{":
            if prev == "anchored_group":
                raise _fail(rule, pattern, f"a quantifier on a group that holds an anchor at '{ch}'")
            if prev == "group" and ch != "?":
                # (a+)+, (a|ab)* backtrack exponentially in Python's re: a
                # crafted command must not stall the hook
                raise _fail(rule, pattern, f"a repeated group at '{ch}' (only '?' may follow a group)")
            if prev not in ("atom", "group"):
                what = "a stacked or lazy quantifier" if prev == "quant" else "a quantifier with nothing to repeat"
                raise _fail(rule, pattern, f"{what} at '{ch}'")
            i = _interval(pattern, i, rule) if ch == "{" else i + 1
            prev = "quant"
            continue
        if ch == "[":
            i = _bracket(pattern, i, rule, "^")
            prev = "atom"
            continue
        if ch in "]}":
            raise _fail(rule, pattern, f"an unescaped '{ch}'")
        if ch == "(":
            if pattern.startswith("(?", i):
                raise _fail(rule, pattern, "a '(?' group (flags, lookarounds, non-capturing)")
            if pattern.startswith("()", i):
                raise _fail(rule, pattern, "an empty group")
            depth += 1
            anchored.append(False)
            prev = "start"
        elif ch == ")":
            if depth == 0:
                raise _fail(rule, pattern, "an unmatched ')'")
            if prev == "start":
                raise _fail(rule, pattern, "an empty alternative")
            depth -= 1
            inner = anchored.pop()
            if inner and anchored:
                anchored[-1] = True
            prev = "anchored_group" if inner else "group"
        elif ch == "|":
            if prev == "start":
                raise _fail(rule, pattern, "an empty alternative")
            prev = "start"
        elif ch in "^$":
            prev = "anchor"
            if anchored:
                anchored[-1] = True
        else:
            prev = "atom"
        i += 1
    if depth:
        raise _fail(rule, pattern, "an unclosed '('")
    if prev == "start" and pattern.endswith("|"):
        raise _fail(rule, pattern, "an empty alternative")


def required_literals(pattern: str, icase: bool = False) -> list[str] | None:
    """Strings of which every match of the dialect regex contains at least one.

    Both matchers use them as a prefilter: a subject that holds none of them
    cannot match, so the regex is never compiled for it (regcomp and ``re``
    dominate the hook's cost).  None means "no useful literal: always run the
    regex".  The result errs towards shorter strings, never towards missing a
    match (``tests/policy/test_fuzz_twins.py`` checks this against ``re``).
    """
    try:
        req, end = _req_alt(pattern, 0)
    except (IndexError, ValueError):
        return None
    if end != len(pattern) or not req:
        return None
    out = sorted({_fold(s) for s in req} if icase else req)
    return out


def _fold(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def _req_alt(p: str, i: int):
    branches = []
    req, i = _req_concat(p, i)
    branches.append(req)
    while i < len(p) and p[i] == "|":
        req, i = _req_concat(p, i + 1)
        branches.append(req)
    if any(b is None for b in branches):
        return None, i
    return set().union(*branches), i


def _best(candidates: list[set]) -> set | None:
    if not candidates:
        return None
    return max(candidates, key=lambda c: (min(len(s) for s in c), -len(c)))


def _req_concat(p: str, i: int):
    candidates: list[set] = []
    run = ""
    while i < len(p) and p[i] not in "|)":
        ch = p[i]
        lit = None
        sub = None
        zero_width = False
        if ch == "\\":
            esc = p[i + 1]
            i += 2
            if esc == "b":
                zero_width = True
            elif esc not in "wWsS":
                lit = esc
        elif ch == "[":
            i = p.index("]", i + 1) + 1
        elif ch == "(":
            sub, i = _req_alt(p, i + 1)
            if p[i] != ")":
                raise ValueError(p)
            i += 1
        elif ch in "^$":
            zero_width = True
            i += 1
        elif ch == ".":
            i += 1
        else:
            lit = ch
            i += 1
        least = 1
        quantified = i < len(p) and p[i] in "*+?{"
        if quantified:
            q = p[i]
            if q in "*?":
                least = 0
                i += 1
            elif q == "+":
                i += 1
            else:
                close = p.index("}", i)
                least = int(p[i + 1 : close].split(",")[0])
                i = close + 1
        if lit is not None and not quantified:
            run += lit
            continue
        # anything else ends the run of plain characters
        if run:
            candidates.append({run})
            run = ""
        if zero_width or least == 0:
            continue
        if lit is not None:
            candidates.append({lit})
        elif sub:
            candidates.append(sub)
    if run:
        candidates.append({run})
    return _best(candidates), i
