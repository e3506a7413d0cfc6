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
