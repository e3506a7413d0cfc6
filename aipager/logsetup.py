"""Logging, set up once for the CLI and the daemon alike: stderr (and the log file, 0600),
with every bot token masked whichever library logs it.

aipager never logs the token, but aiogram and aiohttp errors can carry a request
URL (``/bot<token>/getMe``), so the filter sits on the handlers, where every
logger's records pass.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import Mapping

from aipager.proto import paths

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RedactTokens(logging.Filter):
    """Masks anything shaped like a bot token in a log record."""

    _TOKEN = re.compile(r"(?<!\d)(\d{3,}):[A-Za-z0-9_-]{20,}")

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        redacted = self._TOKEN.sub(lambda m: f"{m.group(1)}:***", text)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._TOKEN.sub(lambda m: f"{m.group(1)}:***", record.exc_text)
        if redacted != text:
            record.msg, record.args = redacted, None
        return True


def setup(env: Mapping[str, str], verbose: bool, *, stderr: bool = True) -> str:
    """Log to ``paths.log_file`` (0600, folder 0700) and, with ``stderr``, to stderr.

    Calling it again replaces the handlers it added before.  Returns the log file path.
    """
    path = paths.log_file(env)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for old in [h for h in root.handlers if getattr(h, "_aipager", False)]:
        root.removeHandler(old)
        old.close()
    handlers: list[logging.Handler] = []
    if stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.close(fd)
        os.chmod(path, 0o600)  # an older file may have been made 0644
        handlers.append(logging.FileHandler(path, encoding="utf-8"))
    except OSError as exc:
        print(f"aipager: cannot write the log file {path}: {exc.strerror}", file=sys.stderr)
    formatter = logging.Formatter(FORMAT)
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(RedactTokens())
        handler._aipager = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    if not verbose:
        # aiohttp/aiogram chatter (every poll, every handled update) only with --verbose.
        for name in ("aiogram", "aiohttp.access"):
            logging.getLogger(name).setLevel(logging.WARNING)
    return path
