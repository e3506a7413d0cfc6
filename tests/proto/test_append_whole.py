"""``fsio.append_whole``: the journals' one append (the chat's update journal and the daemon's
event journal): a record goes in whole or not at all, and says why not."""

from __future__ import annotations

import os
import subprocess
import sys

from aipager.proto import fsio


def test_a_record_is_appended_whole(tmp_path):
    path = tmp_path / "journal"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        assert fsio.append_whole(fd, b"one\n", 0) == ""
        assert fsio.append_whole(fd, b"two\n", 4) == ""
    finally:
        os.close(fd)
    assert path.read_bytes() == b"one\ntwo\n"


def test_a_short_write_is_cut_off_again_so_no_torn_record_stays(tmp_path):
    # A file size limit makes the kernel write only part of the record (as a full disk does);
    # in a child, so the limit binds nobody else.
    path = tmp_path / "journal"
    path.write_bytes(b"kept\n")
    code = (
        "import os, resource, signal, sys\n"
        "from aipager.proto import fsio\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (8, 8))\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
        "print(fsio.append_whole(fd, b'a record too long\\n', 5))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "is full (short write)"
    assert path.read_bytes() == b"kept\n"


def test_a_failed_write_says_why(tmp_path):
    fd = os.open(tmp_path / "journal", os.O_RDONLY | os.O_CREAT, 0o600)
    try:
        assert fsio.append_whole(fd, b"x\n", 0) == "cannot be written (Bad file descriptor)"
    finally:
        os.close(fd)
