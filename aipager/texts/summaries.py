"""One-line summaries of tool calls, for card rows and agent activity."""

from __future__ import annotations

from typing import Any

_MAX = 80

# Which input field best says what a tool is doing, per tool name.
_FIELDS = {
    "Bash": ("command",),
    "Read": ("file_path",),
    "Write": ("file_path",),
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "Glob": ("pattern",),
    "WebFetch": ("url",),
    "WebSearch": ("query",),
    "Agent": ("description", "subagent_type"),
    "Task": ("description", "subagent_type"),
    "TaskStop": ("task_id", "shell_id"),
    "KillShell": ("shell_id", "task_id"),
    "SendUserFile": ("files", "paths", "path"),
}


def shorten(text: str, limit: int = _MAX) -> str:
    """First line of ``text``, at most ``limit`` characters (ellipsis when cut)."""
    line = text.strip().split("\n", 1)[0]
    if len(line) > limit or "\n" in text.strip():
        line = line[: limit - 1].rstrip() + "…"
    return line


def tool_summary(tool: str, tool_input: Any) -> str:
    """``Bash: ls -la``, ``Read: /etc/hosts``, ``Grep: foo in src`` …"""
    if not isinstance(tool_input, dict):
        return tool
    if tool == "Grep":
        pattern = str(tool_input.get("pattern", ""))
        where = tool_input.get("path")
        text = f"{pattern} in {where}" if where else pattern
        return f"{tool}: {shorten(text)}"
    if tool == "AskUserQuestion":
        questions = tool_input.get("questions")
        first = (questions[0].get("question", "")
                 if isinstance(questions, list) and questions and isinstance(questions[0], dict)
                 else "")
        return f"{tool}: {shorten(str(first))}" if first else tool
    for name in _FIELDS.get(tool, ()):
        value = tool_input.get(name)
        if value:
            if isinstance(value, list):
                value = ", ".join(str(v) for v in value)
            return f"{tool}: {shorten(str(value))}"
    # Unknown tools (MCP and future ones): the first short string input says the most.
    for value in tool_input.values():
        if isinstance(value, str) and value.strip():
            return f"{tool}: {shorten(value)}"
    return tool


def request_detail(tool: str, tool_input: Any) -> str:
    """The real command or path a permission request is about (not Claude's description)."""
    if not isinstance(tool_input, dict):
        return ""
    plan = tool_input.get("plan")
    if tool == "ExitPlanMode" and isinstance(plan, str) and plan.strip():
        return plan if len(plan) <= 3000 else plan[:2999] + "…"
    for name in ("command", "file_path", "notebook_path", "url", "path", "pattern", "query"):
        value = tool_input.get(name)
        if isinstance(value, str) and value:
            return value if len(value) <= 1000 else value[:999] + "…"
    return tool_summary(tool, tool_input)
