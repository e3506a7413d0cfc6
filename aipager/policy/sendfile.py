"""SendUserFile checks: Claude sending files from this machine to the chat.

Checked for every task, the owner's and terminal-typed ones included.  A
refusal is a *soft* deny (no safety marker: Claude reads the reason, tells
the person, and the task goes on) plus a ``send_files_refused`` datagram.
``_fasthook/sendfile.pxi`` is the compiled twin (same order of checks, same
reasons; tests/policy/test_sendfile_twins.py).  Builtins only.
"""

from __future__ import annotations

import posix

from aipager.policy import _match_py, floor, rules

MAX_BYTES = 50 * 1024 * 1024

#: file names that look like secrets, as dialect globs on the base name
SECRET_NAMES = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.p12",
    "*.pfx",
    "*.kdbx",
    "*.jks",
    "*.keystore",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "*credentials*.json",
)

#: extra places never sent, on top of the floor and credential paths
SEND_ONLY = ("/proc/**", "/sys/**", "/dev/**")


def send_floor(env, home: str) -> list[str]:
    """No-access globs that apply to every SendUserFile."""
    base = floor.load_floor(env)["no_access"]
    extra = floor.expand_all(floor.CREDENTIAL_PATHS + SEND_ONLY, home)
    return rules.stricter(dict(rules.empty(), no_access=base), dict(rules.empty(), no_access=extra))[
        "no_access"
    ]


def requested_files(tool_input) -> list:
    """The paths a SendUserFile call names (strings, or objects with a path)."""
    if not isinstance(tool_input, dict):
        raise _match_py.BadInput("tool_input is not an object")
    out: list = []
    for key in ("files", "paths", "file_paths"):
        items = tool_input.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            items = [items]
        for item in items:
            out.append(item.get("path", item.get("file_path")) if isinstance(item, dict) else item)
    for key in ("file_path", "path"):
        if tool_input.get(key) is not None:
            out.append(tool_input[key])
    return out


def _file_problem(real: str) -> tuple[str, str] | None:
    try:
        st = posix.stat(real)
    except OSError:
        return "missing", "the file does not exist"
    if (st.st_mode & 0o170000) != 0o100000:
        return "not_file", "not a regular file"
    if st.st_nlink > 1:
        return "hard_link", "the file has other hard links"
    if st.st_size == 0:
        return "empty", "the file is empty"
    if st.st_size > MAX_BYTES:
        return "too_big", "larger than 50 MB"
    if not posix.access(real, posix.R_OK):
        return "unreadable", "the file cannot be read"
    return None


def check_file(path, cwd: str, home: str, send_globs: list[str], task: dict | None):
    """``(code, reason)`` why one file may not be sent, or None."""
    if not isinstance(path, str) or not path:
        return "unchecked", "not a file path"
    try:
        forms = _match_py.path_forms(path, cwd, home)
    except _match_py.BadInput:
        return "unchecked", "relative path without a working folder"
    for form in forms:
        for glob in send_globs:
            if _match_py.glob_match(glob, form):
                return "floor", f"{form} is in a protected place"
        name = form.rsplit("/", 1)[-1]
        for glob in SECRET_NAMES:
            if _match_py.glob_match(glob, name):
                return "floor", f"{name} looks like a secret"
        if task is not None:
            for glob in task["no_access"]:
                if _match_py.glob_match(glob, form):
                    return "turn_rules", f"{form} is protected for this task"
    return _file_problem(forms[-1])


def check(tool_input, cwd: str, home: str, env, task: dict | None) -> list[dict]:
    """Every refused file as ``{path, code, reason}``; empty when all may go.

    Args:
        task: the task's rules, or None for an unrestricted task.
    """
    files = requested_files(tool_input)
    if not files:
        return [{"path": "", "code": "unchecked", "reason": "no file named"}]
    globs = send_floor(env, home)
    refused = []
    for path in files:
        problem = check_file(path, cwd, home, globs, task)
        if problem:
            refused.append({"path": str(path), "code": problem[0], "reason": problem[1]})
    return refused


def refusal_text(refused: list[dict]) -> str:
    parts = [f"{item['path'] or '(none)'}: {item['reason']}" for item in refused]
    return "aipager will not send " + ("this file" if len(refused) == 1 else "these files") + ": " + "; ".join(parts)
