"""Reference matcher: the readable specification of a PreToolUse decision.

``_fasthook/match.pxi`` is its compiled twin.  The two must stay
behaviourally identical: same function names, same constants, same order of
checks, same reason strings.  A change to one lands in the other in the same
commit; ``tests/cases/policy_cases.json`` and the differential fuzz hold them
together.

The input is a task snapshot (see ``aipager.policy.snapshot``) whose patterns
were validated against the portable dialect and whose ``~`` were expanded when
it was written, so this module only evaluates.  Builtins only at import time;
``re`` is imported on first use because the hook twin often never needs it.
"""

from __future__ import annotations

ALLOW = "allow"
DENY = "deny"

#: tool_input keys that name a file or folder the tool touches
PATH_KEYS = ("file_path", "filePath", "notebook_path", "path")

#: tools that change the file they name (lower case: compared case-insensitively)
WRITE_TOOLS = ("write", "edit", "multiedit", "notebookedit", "apply_patch")

#: AX Code's patch tool: its paths are the ones named on the envelope lines
PATCH_TOOL = "apply_patch"

#: envelope line heads that name a file an apply_patch creates, changes, deletes or moves to
PATCH_MARKS = ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:")

#: more paths than this in one patch is denied (bounds the work, fails closed)
PATCH_PATH_CAP = 64

#: tools that read a whole folder tree; without a path they search the cwd
SEARCH_TOOLS = ("glob", "grep", "ls", "list")

#: characters dropped to build the second command subject (defeats s"u"do)
QUOTE_CHARS = "\"'\\"

REASON_HALTED = (
    "task halted: a prior tool call of this task was blocked by the safety policy;"
    " start a new request"
)

_cache: dict = {}
#: ASCII-only lower-casing (the C twin folds bytes A-Z)
_FOLD = {c: c + 32 for c in range(65, 91)}


class BadInput(ValueError):
    """The payload has a field of the wrong type: the caller fails closed."""


def _re():
    import re  # lazy: ~5 ms the hook only pays when a regex is evaluated

    return re


def py_regex(pattern: str) -> str:
    """Rewrite a dialect regex for Python: POSIX ``$`` is Python's ``\\Z``."""
    out = []
    i = 0
    in_set = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_set:
            if ch == "]" and not (out and out[-1] in ("[", "[^")):
                in_set = False
            out.append(ch)
        elif ch == "[":
            in_set = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
                continue
            out.append(ch)
        elif ch == "$":
            out.append("\\Z")
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def py_glob(pattern: str) -> str:
    """Translate a dialect glob to a Python regex with fnmatch semantics."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            close = pattern.index("]", i + 1)
            body = pattern[i + 1 : close]
            neg = body.startswith("!")
            if neg:
                body = body[1:]
            # '&', '~', '|' doubled inside a set warn in Python; '^' first negates
            body = "".join("\\" + c if c in "&~|^[]\\" else c for c in body)
            out.append("[" + ("^" if neg else "") + body + "]")
            i = close
        else:
            out.append("\\" + ch if not ch.isalnum() else ch)
        i += 1
    return "(?s:" + "".join(out) + ")\\Z"


def regex_search(pattern: str, icase: bool, subject: str) -> bool:
    """Search ``subject`` for the dialect regex ``pattern``."""
    key = ("r", pattern, icase)
    rx = _cache.get(key)
    if rx is None:
        re = _re()
        flags = re.S | re.A | (re.I if icase else 0)
        rx = _cache[key] = re.compile(py_regex(pattern), flags)
    return rx.search(subject) is not None


def glob_match(pattern: str, subject: str) -> bool:
    """Match the whole ``subject`` against the dialect glob ``pattern``."""
    # literal head and tail decide most subjects without compiling anything
    # (fnmatch(3) is cheap in C; here every compile costs, and so does `re`)
    head = literal_prefix(pattern)
    if not subject.startswith(head):
        return False
    if len(head) == len(pattern):
        return subject == pattern
    tail = pattern[max(pattern.rfind("*"), pattern.rfind("?"), pattern.rfind("]")) + 1 :]
    if not subject.endswith(tail):
        return False
    key = ("g", pattern)
    rx = _cache.get(key)
    if rx is None:
        rx = _cache[key] = _re().compile(py_glob(pattern))
    return rx.match(subject) is not None


def ascii_lower(text: str) -> str:
    """Lower-case A-Z only, as the C twin does byte by byte."""
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def collapse(path: str) -> str:
    """Drop empty and ``.`` components and apply ``..`` lexically (never above /)."""
    parts: list[str] = []
    for comp in path.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if parts:
                parts.pop()
            continue
        parts.append(comp)
    return "/" + "/".join(parts)


def expand(path: str, cwd: str, home: str) -> str:
    """``~`` to ``home`` and relative to ``cwd``; raise BadInput when impossible."""
    if home and (path == "~" or path.startswith("~/")):
        path = home + path[1:]
    if not path.startswith("/"):
        if not cwd.startswith("/"):
            raise BadInput("relative path without an absolute cwd")
        path = cwd + "/" + path
    return path


def realpath_tail(path: str) -> str:
    """Resolve the longest existing prefix of the absolute ``path`` with the
    kernel's symlink semantics, then apply the rest lexically."""
    from aipager.proto import fsio

    comps = [c for c in path.split("/") if c]
    for k in range(len(comps), -1, -1):
        head = "/" + "/".join(comps[:k])
        try:
            real = fsio.realpath_strict(head)
        except (OSError, ValueError):
            continue
        return collapse(real + "/" + "/".join(comps[k:]))
    return collapse(path)


def path_forms(path: str, cwd: str, home: str) -> list[str]:
    """The path as spelled, as an absolute lexical path, and as resolved."""
    full = expand(path, cwd, home)
    forms = [path]
    for form in (collapse(full), realpath_tail(full)):
        if form not in forms:
            forms.append(form)
    return forms


def literal_prefix(glob: str) -> str:
    """The part of ``glob`` before its first wildcard."""
    # three str.find calls, not a character loop: this runs for every glob
    # of the task against every path form
    cut = len(glob)
    for ch in "*?[":
        i = glob.find(ch, 0, cut)
        if i >= 0:
            cut = i
    return glob[:cut]


def glob_dir(pattern: str) -> str:
    """The folder a Glob tool pattern starts in, or '' when it is relative."""
    if not (pattern.startswith("/") or pattern == "~" or pattern.startswith("~/")):
        return ""
    lit = literal_prefix(pattern)
    cut = lit.rfind("/")
    return lit[: cut + 1] if cut >= 0 else lit


def check_path(snap: dict, tool: str, value, cwd: str, home: str, search: bool) -> str | None:
    """Deny reason for one path the tool touches, or None."""
    if not isinstance(value, str):
        raise BadInput("path is not a string")
    forms = path_forms(value, cwd, home)
    for form in forms:
        for glob in snap["no_access"]:
            if glob_match(glob, form):
                return f"{form} is protected (no access: {glob})"
    if tool in WRITE_TOOLS:
        for form in forms:
            for glob in snap["no_write"]:
                if glob_match(glob, form):
                    return f"{form} is read-only for this task (no write: {glob})"
    if search:
        for form in forms:
            root = form if form.endswith("/") else form + "/"
            for glob in snap["no_access"]:
                if literal_prefix(glob).startswith(root):
                    return f"searching {form} would reach protected {glob}"
    return None


def patch_paths(text) -> tuple[list[str], str]:
    """The paths an apply_patch ``patchText`` names, or ``([], reason)`` to deny."""
    if not isinstance(text, str):
        return [], "apply_patch input has no patchText string"
    found: list[str] = []
    for line in text.split("\n"):
        # leading/trailing blanks are tolerated by lenient patch parsers, so here too
        line = line.strip()
        for mark in PATCH_MARKS:
            if line.startswith(mark):
                name = line[len(mark) :].strip()
                if not name:
                    return [], "apply_patch names an empty path"
                found.append(name)
                break
        if len(found) > PATCH_PATH_CAP:
            return [], f"apply_patch names more than {PATCH_PATH_CAP} paths"
    if not found:
        return [], "apply_patch names no file path"
    return found, ""


def check_command(snap: dict, command) -> str | None:
    """Deny reason for a shell command, or None."""
    if not isinstance(command, str):
        raise BadInput("command is not a string")
    subjects = [command]
    stripped = "".join(c for c in command if c not in QUOTE_CHARS)
    if stripped != command:
        subjects.append(stripped)
    folded = [s.translate(_FOLD) for s in subjects]
    for key, icase in (("commands", False), ("commands_i", True)):
        patterns = snap[key]
        needles = snap.get(key + "_needles")
        if not isinstance(needles, list) or len(needles) != len(patterns):
            needles = [None] * len(patterns)
        for pattern, need in zip(patterns, needles, strict=True):
            for subject, low in zip(subjects, folded, strict=True):
                if not may_match(need, low if icase else subject):
                    continue
                if regex_search(pattern, icase, subject):
                    return f"command matches denied pattern {pattern}"
    return None


def may_match(needles, subject: str) -> bool:
    """False only when ``subject`` holds none of the pattern's required literals."""
    if not isinstance(needles, list) or not needles:
        return True
    for needle in needles:
        if not isinstance(needle, str) or not needle or not needle.isascii() or needle in subject:
            return True
    return False


def decide(snap: dict, tool_name: object, tool_input: object, cwd: str, home: str) -> tuple[str, str]:
    """Decide one PreToolUse call against a task snapshot.

    Args:
        snap: the task's rules (``snapshot.normalise`` output).
        tool_name: as Claude Code (or AX Code) spells it; compared case-insensitively.
        tool_input: the tool's arguments.
        cwd: the event's working directory, for relative paths.
        home: the user's home, for ``~`` (empty: no expansion).

    Returns:
        ``(ALLOW, "")`` or ``(DENY, reason)``; the reason lacks the
        "aipager safety policy: " prefix, which the caller adds.

    Raises:
        BadInput: a field has the wrong type; the caller denies (fail closed).
    """
    if snap["halted"]:
        return DENY, REASON_HALTED
    if snap["origin"] == "terminal" or snap["exempt"]:
        return ALLOW, ""
    if not isinstance(tool_name, str) or not isinstance(tool_input, dict):
        raise BadInput("tool_name or tool_input has the wrong type")
    tool = ascii_lower(tool_name)
    allowed = snap["allowed_tools"]
    if allowed is not None and tool not in allowed:
        return DENY, f"tool {tool_name} is not allowed for this task"
    if tool in snap["denied_tools"]:
        return DENY, f"tool {tool_name} is denied for this task"
    if tool == PATCH_TOOL:
        names, unreadable = patch_paths(tool_input.get("patchText"))
        if unreadable:
            return DENY, unreadable
        for name in names:
            reason = check_path(snap, tool, name, cwd, home, False)
            if reason:
                return DENY, reason
    search = tool in SEARCH_TOOLS
    seen_path = False
    for key in PATH_KEYS:
        value = tool_input.get(key)
        if value is None:
            continue
        seen_path = True
        reason = check_path(snap, tool, value, cwd, home, search)
        if reason:
            return DENY, reason
    if search and not seen_path:
        reason = check_path(snap, tool, cwd, cwd, home, True)
        if reason:
            return DENY, reason
    if tool == "glob":
        pattern = tool_input.get("pattern")
        if isinstance(pattern, str) and glob_dir(pattern):
            reason = check_path(snap, tool, glob_dir(pattern), cwd, home, True)
            if reason:
                return DENY, reason
    command = tool_input.get("command")
    if command is not None:
        reason = check_command(snap, command)
        if reason:
            return DENY, reason
    return ALLOW, ""
