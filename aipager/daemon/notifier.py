"""The output seam: everything the daemon wants a person to see goes through a Notifier.

Handlers never talk to Telegram.  They hand ``Output`` records to a
``Notifier``; the Telegram layer (next round) implements the protocol by
queueing them for an aiogram sender task.  Until then the daemon and the tests
use ``RecordingNotifier``.

``emit`` is synchronous on purpose: handlers stay plain functions over the
registry (fast, testable without an event loop) and a real notifier only has
to enqueue.

Output kinds (``Output.kind``) and their ``data``:

- ``card``: the activity card of ``data["task"]`` changed; ``text`` is the full
  rendering, ``data["final"]`` is true once the task is over and no work runs.
- ``notice``: a one-line notice (``data["notice"]`` names it: compacted,
  compacting, context_warning, still_waiting, session_end, safety_blocked,
  files_refused, memory_cap, api_error, report_error, late_tap).
- ``answer``: Claude's answer, delivered once (``data["digest"]``, ``data["task"]``).
- ``permission``: a permission request (``data``: key, tool, detail, buttons,
  separate, request_id, reply_addr, agent_id; ``late_answer`` when it is shown again
  because a tap reached its hook too late, see ``replies.late``).
- ``question``: an AskUserQuestion (``data``: key, options, multi_select of the first
  question, and ``questions``: every question as ``{question, header, options, multi}``).
- ``request_closed``: a request or question was answered (in the terminal, or by a tap the
  waiting hook took: then ``data`` also has ``via``, ``answer``, ``who``); late taps type nothing.
- ``request_update``: the hook stopped waiting (``data["reply_addr"]`` cleared).
- ``reaction``: set ``data["emoji"]`` on chat message ``data["msg_id"]``.
- ``release``: a held chat message may now be typed (``data["msg_id"]``, ``text``).
- ``diff``: a Write/Edit preview when enabled.
- ``files``: a SendUserFile ran: ``data["files"]`` (absolute paths), ``text`` its caption,
  ``data["task"]``, ``data["cwd"]``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol


@dataclass(frozen=True, slots=True)
class Output:
    """One thing to show: see the module docstring for kinds."""

    kind: str
    session: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    #: the journal number of the datagram whose handling made it (``journal``); 0 when a
    #: timer or a tap made it
    origin: int = 0
    #: made again while the journal was replayed after a hard kill: a chat that already
    #: showed outputs up to this ``origin`` skips it (nothing is shown twice)
    replayed: bool = False


class Notifier(Protocol):
    def emit(self, out: Output) -> None:
        """Take one output; must not block or raise for delivery problems."""


class RecordingNotifier:
    """Keeps outputs in memory: the test fake, and the daemon's sink before the bot exists.

    Args:
        maxlen: keep only the most recent outputs (None keeps all; the daemon
            passes a bound so a long run cannot grow without limit).
    """

    def __init__(self, maxlen: int | None = None) -> None:
        self.outputs: deque[Output] = deque(maxlen=maxlen)

    def emit(self, out: Output) -> None:
        self.outputs.append(out)

    def of(self, kind: str, session: str | None = None) -> list[Output]:
        """Outputs of one kind, optionally for one session, oldest first."""
        return [o for o in self.outputs if o.kind == kind and (session is None or o.session == session)]

    def texts(self, kind: str, session: str | None = None) -> list[str]:
        return [o.text for o in self.of(kind, session)]

    def notices(self, name: str | None = None) -> list[str]:
        return [o.text for o in self.outputs if o.kind == "notice" and (name is None or o.data.get("notice") == name)]

    def clear(self) -> None:
        self.outputs.clear()


class FanoutNotifier:
    """Sends every output to several notifiers (e.g. a log line and the recorder)."""

    def __init__(self, targets: Iterable[Notifier]) -> None:
        self._targets = tuple(targets)

    def emit(self, out: Output) -> None:
        for target in self._targets:
            target.emit(out)
