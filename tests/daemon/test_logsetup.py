"""Logging as the daemon sets it up: owner-only log file, bot tokens masked everywhere."""

from __future__ import annotations

import logging
import os
import stat

from aipager import logsetup
from aipager.proto import paths

TOKEN = "123456789:AAsecretSECRETsecretSECRET0000"


def test_tokens_are_masked_in_messages_and_tracebacks_of_any_logger(capsys):
    env = dict(os.environ)
    path = logsetup.setup(env, verbose=False)
    try:
        logging.getLogger("aiohttp.client").error("GET /bot%s/getUpdates failed", TOKEN)
        try:
            raise RuntimeError(f"https://api.example/bot{TOKEN}/getMe")
        except RuntimeError:
            logging.getLogger("aiogram.dispatcher").exception("polling failed")
    finally:
        for handler in [h for h in logging.getLogger().handlers if getattr(h, "_aipager", False)]:
            handler.flush()
            logging.getLogger().removeHandler(handler)
            handler.close()
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert "secretSECRET" not in text and "secretSECRET" not in capsys.readouterr().err
    assert text.count("123456789:***") == 2
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert path == paths.log_file(env)


def test_an_old_world_readable_log_is_made_owner_only():
    env = dict(os.environ)
    path = paths.log_file(env)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("old\n")
    os.chmod(path, 0o644)
    logsetup.setup(env, verbose=False, stderr=False)
    for handler in [h for h in logging.getLogger().handlers if getattr(h, "_aipager", False)]:
        logging.getLogger().removeHandler(handler)
        handler.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
