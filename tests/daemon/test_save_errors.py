"""A state file that cannot be written is logged once per distinct error, not every tick."""

from __future__ import annotations

import logging
import os
import shutil

from aipager.proto import paths
from aipager.daemon.app import Daemon


def _save_errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "aipager.daemon" and "cannot save the daemon state" in r.getMessage()]


def test_a_state_folder_that_cannot_be_written_is_logged_once_per_error(caplog):
    env = dict(os.environ)
    daemon = Daemon(env)
    folder = paths.state_dir(env)
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    with open(folder, "w"):
        pass  # a file where the state folder should be: every save fails
    caplog.set_level(logging.INFO, logger="aipager.daemon")

    for _ in range(20):  # the tick tries every 0.5 s
        daemon.save(force=True)
    assert len(_save_errors(caplog)) == 1

    # Another failure is news: logged once too.
    os.unlink(folder)
    os.makedirs(paths.daemon_state_file(env))  # a folder in the file's place
    for _ in range(20):
        daemon.save(force=True)
    errors = _save_errors(caplog)
    assert len(errors) == 2 and errors[0] != errors[1]

    # Fixed: saved, said so once; a later failure is logged again.
    shutil.rmtree(paths.daemon_state_file(env))
    daemon.save(force=True)
    daemon.save(force=True)
    assert os.path.isfile(paths.daemon_state_file(env))
    assert [r.getMessage() for r in caplog.records].count("the daemon state is saved again") == 1
    os.unlink(paths.daemon_state_file(env))
    os.makedirs(paths.daemon_state_file(env))
    daemon.save(force=True)
    assert len(_save_errors(caplog)) == 3


def test_a_clients_facts_changing_are_saved_without_other_news(monkeypatch):
    """The page's address appears in the saved state once it listens (``aipager page`` reads
    it there), though no session changed; unchanged facts write nothing."""
    from aipager.daemon import app

    env = dict(os.environ)
    daemon = Daemon(env)
    page = {"web": {"url": None}}
    daemon.add_facts(lambda: page)
    clock = [1000.0]
    monkeypatch.setattr(app.time, "monotonic", lambda: clock[0])
    daemon.save(force=True)
    written = os.stat(paths.daemon_state_file(env)).st_mtime_ns

    clock[0] += app.SAVE_SECONDS
    daemon.save()
    assert os.stat(paths.daemon_state_file(env)).st_mtime_ns == written  # nothing new

    page["web"] = {"url": "http://127.0.0.1:7180/"}
    daemon.save()
    with open(paths.daemon_state_file(env), encoding="utf-8") as fh:
        assert '"url":"http://127.0.0.1:7180/"' in fh.read().replace(" ", "")
