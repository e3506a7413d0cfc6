"""Tell the owner about a host once per period, not once per event.  Pure, no I/O.

A host that publishes a thousand bad records must not send a thousand messages to
the chat: the first is said, the rest of the period only counted, and the next
message (a period later) says how many came in between.
"""

from __future__ import annotations

#: seconds between two messages about the same host
PERIOD = 3600.0


class OncePer:
    """Args:
        period: seconds between two ``allow``s for one key."""

    def __init__(self, period: float = PERIOD) -> None:
        self.period = period
        #: key → (when it was last allowed, how many were held back since)
        self._last: dict[str, tuple[float, int]] = {}

    def allow(self, key: str, now: float) -> int | None:
        """None when ``key`` was allowed less than a period ago (this one is counted);
        else how many were held back since the last time (0 the first time)."""
        last = self._last.get(key)
        if last is not None and now - last[0] < self.period:
            self._last[key] = (last[0], last[1] + 1)
            return None
        self._last[key] = (now, 0)
        return last[1] if last is not None else 0
