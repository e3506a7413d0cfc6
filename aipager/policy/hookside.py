"""Hook-side policy steps: the Python twin of ``_fasthook/policy.pxi``.

CONTRACT (stub until the safety-policy issue fills it in).  The hook (both
twins) runs, for every event of a session aipager started:

    outcome = before_forward(name, event, ctx)   # may send own datagrams first
    forward the event (never for PreModelSwitch)
    outcome = after_forward(name, event, ctx)     # PreToolUse decision

``ctx`` has ``session`` (str, ``claude-<name>``), ``env`` (mapping),
``send(dict)`` (sends one datagram, never blocks) and ``raw`` (stdin bytes).
A step returns None (nothing to print) or an ``Outcome``: the hook prints
``stdout`` and exits with ``exit_code``.  If a step raises, the hook reports
``report_error`` and, for PreToolUse, denies (fail closed).

Builtins only at import time: this runs inside a freshly started interpreter
that Claude Code waits on.
"""

from __future__ import annotations


class Outcome:
    __slots__ = ("stdout", "exit_code")

    def __init__(self, stdout: str = "", exit_code: int = 0) -> None:
        self.stdout = stdout
        self.exit_code = exit_code


def before_forward(name: str, event: dict, ctx) -> Outcome | None:
    return None


def after_forward(name: str, event: dict, ctx) -> Outcome | None:
    return None
