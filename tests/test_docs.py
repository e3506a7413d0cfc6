"""The documents name only what exists: every path, module and name in their inline code.

For ``docs/architecture.md``, ``docs/programs.md`` and ``README.md`` each inline-code span
(single backticks, outside fenced blocks) is read as one of:

- a repository path: it has a ``/`` and ends in ``.py``, ``.pyx``, ``.pxi``, ``.md``,
  ``.json`` or ``.sh``, or it starts with ``aipager/``, ``tests/``, ``docs/``, ``scripts/``,
  ``bench/`` or ``_fasthook/``.  It must exist from the repository root (a folder may end in
  ``/``; ``path::name`` checks the path), unless it is in a folder the tests make and git
  ignores (``GENERATED``).  A path starting with ``.`` or ``/`` is somebody else's
  (``.claude/settings.json``, ``/etc/shadow``), not the repository's: skipped.
- a dotted name starting with ``aipager.``: the longest prefix that imports is imported,
  the rest must be its attributes.
- in ``docs/architecture.md`` only, a qualified name (``Service.ask``,
  ``tasks.finish_task``): its last part must be defined in the source under ``aipager/`` or
  ``_fasthook/`` (``def``, ``class``, ``NAME =``, a class field ``NAME: type``, or
  ``cdef ... NAME(``), and each part before it must be such a name or a module or package
  there.  A file name (``pyproject.toml``, ``OTHER_FILES``) is not a qualified name.  The
  README names commands (``aipager start``) this cannot tell from names, so it is held to
  paths and ``aipager.`` names only.

A span with a space, ``<``, ``*``, ``~``, ``$``, ``{`` or ``...`` is a pattern or a command
line, not a name: skipped.  Plain text search and a few imports: the whole check is fast.
"""

from __future__ import annotations

import importlib
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("docs/architecture.md", "docs/programs.md", "README.md")
#: the page that may name code (``Class.attr``) and must stay one short page
ARCHITECTURE = "docs/architecture.md"
MAX_LINES = 300

PATH_ENDS = (".py", ".pyx", ".pxi", ".md", ".json", ".sh")
PATH_STARTS = ("aipager/", "tests/", "docs/", "scripts/", "bench/", "_fasthook/")
SKIP = (" ", "<", "*", "~", "$", "{", "...", "…")
#: file names that are not code names (``pyproject.toml``, ``index.html``)
OTHER_FILES = (".toml", ".html", ".css", ".js", ".conf", ".pem", ".txt", ".yml", ".yaml",
               ".jsonl", ".db", ".po", ".png", ".c", ".so", ".cfg", ".ini", ".lock")
#: folders a document may name that the tests or the build make (each ignored by git)
GENERATED = ("tests/artifacts/",)

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
DOTTED = re.compile(rf"{IDENT}(?:\.{IDENT})+")
AIPAGER_NAME = re.compile(rf"aipager(?:\.{IDENT})+")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
TICKS = re.compile(r"`+")
#: how the source defines a name (plain text, one pass over every file)
DEFINED = (
    re.compile(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+({IDENT})", re.M),
    re.compile(rf"^[ \t]*(?:c?p?def[ \t]+|ctypedef[ \t]+)?(?:class|struct|enum|union)[ \t]+({IDENT})",
               re.M),
    re.compile(rf"^[ \t]*({IDENT})(?:[ \t]*:[^=\n]+)?[ \t]+=[ \t]", re.M),
    re.compile(rf"^    ({IDENT}):[ \t]*[A-Za-z_]", re.M),
    re.compile(rf"^[ \t]*cp?def\b[^\n(]*?\b({IDENT})[ \t]*\(", re.M),
)
SOURCES = ("aipager", "_fasthook")
SOURCE_ENDS = (".py", ".pyx", ".pxi", ".pyi")


def spans(text: str) -> list[tuple[int, str]]:
    """The (line, text) of each single-backtick span outside fenced blocks."""
    kept: list[str] = []
    fence = ""
    for line in text.splitlines():
        found = FENCE.match(line)
        if fence:
            if found and found.group(1)[0] == fence[0] and len(found.group(1)) >= len(fence):
                fence = ""
            kept.append("")
        elif found:
            fence = found.group(1)
            kept.append("")
        else:
            kept.append(line)
    body = "\n".join(kept)
    out: list[tuple[int, str]] = []
    runs = list(TICKS.finditer(body))
    i = 0
    while i < len(runs):
        opening = runs[i]
        # a span ends at the next run of as many backticks (CommonMark); longer ones skipped
        close = next((j for j in range(i + 1, len(runs))
                      if len(runs[j].group()) == len(opening.group())), None)
        if close is None:
            i += 1
            continue
        if len(opening.group()) == 1:
            content = body[opening.end():runs[close].start()].replace("\n", " ")
            out.append((body.count("\n", 0, opening.start()) + 1, content))
        i = close + 1
    return out


def is_path(span: str) -> bool:
    return ("/" in span and span.endswith(PATH_ENDS)) or span.startswith(PATH_STARTS)


def path_problem(span: str) -> str | None:
    path = span.split("::", 1)[0]
    if path.startswith(GENERATED):
        return None
    return None if (ROOT / path).exists() else "no such path"


def import_problem(span: str) -> str | None:
    parts = span.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
                continue  # no such module: a shorter prefix may be one
            return f"importing {module_name} failed: {exc}"
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return f"{module_name} has no {'.'.join(parts[cut:])}"
            obj = getattr(obj, attr)
        return None
    return "nothing of it imports"


@cache
def defined_names() -> frozenset[str]:
    """Every name the source defines, and every module and package name under it."""
    names: set[str] = set()
    for top in SOURCES:
        for path in (ROOT / top).rglob("*"):
            if "__pycache__" in path.parts:
                continue
            if path.is_dir():
                names.add(path.name)
                continue
            if not path.name.endswith(SOURCE_ENDS):
                continue
            names.add(path.name.split(".", 1)[0])
            text = path.read_text(encoding="utf-8", errors="replace")
            for pattern in DEFINED:
                names.update(pattern.findall(text))
    return frozenset(names)


def name_problem(span: str) -> str | None:
    parts = span.removesuffix("()").split(".")
    known = defined_names()
    if parts[-1] not in known:
        return f"{parts[-1]} is defined nowhere under aipager/ or _fasthook/"
    missing = [p for p in parts[:-1] if p not in known and p not in ("self", "cls")]
    if missing:
        return f"{', '.join(missing)} is neither a module nor a name under aipager/ or _fasthook/"
    return None


def problems(doc: str) -> list[str]:
    text = (ROOT / doc).read_text(encoding="utf-8")
    found = []
    for line, span in spans(text):
        if not span or any(mark in span for mark in SKIP) or span.startswith((".", "/")):
            continue
        if "://" in span:
            continue
        if is_path(span):
            why = path_problem(span)
        elif AIPAGER_NAME.fullmatch(span):
            why = import_problem(span)
        elif doc == ARCHITECTURE and DOTTED.fullmatch(span.removesuffix("()")) \
                and not span.endswith(PATH_ENDS + OTHER_FILES):
            why = name_problem(span)
        else:
            continue
        if why is not None:
            found.append(f"{doc}:{line}: `{span}`: {why}")
    return found


@pytest.mark.parametrize("doc", DOCS)
def test_the_document_names_only_what_exists(doc: str) -> None:
    wrong = problems(doc)
    assert not wrong, f"{len(wrong)} name(s) in {doc} that do not exist:\n" + "\n".join(wrong)


def test_the_architecture_page_stays_short() -> None:
    lines = (ROOT / ARCHITECTURE).read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{ARCHITECTURE} has {lines} lines; keep it to {MAX_LINES}"


def test_generated_folders_are_ignored_by_git() -> None:
    """A document may name a folder that does not exist yet only when the tests or the build
    make it (and git ignores it)."""
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    for folder in GENERATED:
        assert any(line.strip().strip("/") == folder.strip("/") for line in ignored), \
            f"{folder} is not in .gitignore: a document must name only what exists"


def test_the_checker_reads_spans_as_the_documents_mean_them() -> None:
    text = ("`aipager/port/commands.py` and ``a `tick` inside``\n```sh\n`aipager/nope.py`\n```\n"
            "`Service.ask` across `a\nline`\n")
    assert spans(text) == [(1, "aipager/port/commands.py"), (5, "Service.ask"), (5, "a line")]
    assert path_problem("aipager/nope.py") == "no such path"
    assert import_problem("aipager.daemon.screen.read") is None
    assert import_problem("aipager.daemon.screen.nope") is not None
    assert import_problem("aipager.nope") is not None
    assert name_problem("Service.ask") is None
    assert name_problem("Service.nope_nothing") is not None
    assert name_problem("Nowhere.ask") is not None
