"""What the page keeps across a daemon restart: the browsers signed in and the
conversations.

A restarted daemon used to sign every browser out (the cookie sessions lived in memory)
and show empty conversations, so a person on the phone lost what Claude had said the
moment the daemon was updated or crashed.  The page now keeps both in one owner-only
file in aipager's state folder (which the floor keeps from every member's task): the
cookies only as their sha256, which opens nothing by itself, and each session's last
conversation entries.  Writes are debounced (one write for a burst of changes) and done
once more when the page stops; a damaged file is set aside and the page starts empty.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Mapping

from aipager.proto import fsio, paths
from aipager.web.auth import Logins
from aipager.web.live import WebNotifier

log = logging.getLogger("aipager.web")

#: seconds a change waits for the next before the file is written
DELAY = 2.0
#: the largest file read back
READ_MAX = 16 << 20


class Keeper:
    def __init__(self, env: Mapping[str, str], logins: Logins, notifier: WebNotifier) -> None:
        self.path = paths.page_state_file(env)
        self.logins = logins
        self.notifier = notifier
        self._pending: asyncio.TimerHandle | None = None

    def load(self) -> None:
        """Put back what the last run kept, then save on every change."""
        if os.path.lexists(self.path):
            data = fsio.read_json_own(self.path, READ_MAX)
            if data is None:
                aside = self.path + ".damaged"
                log.warning("the page's saved state %s cannot be read: set aside as %s; the "
                            "page starts without it", self.path, aside)
                try:
                    os.replace(self.path, aside)
                except OSError:
                    fsio.unlink_quiet(self.path)
            else:
                self.logins.keep_browsers(data.get("browsers"))
                self.notifier.restore(data.get("talk"))
        self.logins.on_change = self.changed
        self.notifier.on_change = self.changed

    def changed(self) -> None:
        if self._pending is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a test's direct call): write now
            self.save()
            return
        self._pending = loop.call_later(DELAY, self.save)

    def save(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        doc: dict[str, Any] = {
            "browsers": self.logins.signed_in_browsers(),
            "talk": {s: list(entries) for s, entries in self.notifier.talk.items() if entries},
        }
        try:
            fsio.ensure_private_dir(os.path.dirname(self.path))
            fsio.write_json_atomic(self.path, doc)
        except (OSError, TypeError, ValueError) as exc:
            log.warning("the page's state could not be saved to %s: %s", self.path, exc)


__all__ = ["DELAY", "Keeper"]
