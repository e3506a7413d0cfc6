"""Sign-in links made outside the daemon (``aipager page``): kept by their sha256 in an
owner-only folder, taken once by the page's ``Logins``, refused when old or not ours."""

from __future__ import annotations

import os
import stat
import threading

from aipager.web import links
from aipager.web.auth import Logins, digest


def _logins(folder: str, now: list[float]) -> Logins:
    return Logins(clock=lambda: now[0],
                  made_elsewhere=lambda hashed, at: links.take(folder, hashed, at))


def test_a_minted_link_signs_in_once_and_leaves_nothing(tmp_path):
    folder = str(tmp_path / "state" / "page-links")
    token = links.mint(folder)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert os.listdir(folder) == [digest(token)]  # the hash, never the token
    logins = _logins(folder, [os.stat(folder).st_mtime])
    cookie = logins.exchange(token)
    assert cookie and logins.signed_in(cookie)
    assert logins.exchange(token) is None and os.listdir(folder) == []


def test_an_old_link_is_refused_and_swept(tmp_path):
    folder = str(tmp_path / "page-links")
    old = links.mint(folder)
    made = os.stat(os.path.join(folder, digest(old))).st_mtime
    now = [made + links.LINK_TTL + 1]
    assert _logins(folder, now).exchange(old) is None
    stale = links.mint(folder, now=made)  # a second one, then the clock moves on
    links.mint(folder, now=made + links.LINK_TTL + 1)
    assert digest(stale) not in os.listdir(folder)  # swept when the next was made


def test_a_file_that_is_not_an_owner_only_link_is_not_a_sign_in(tmp_path):
    folder = str(tmp_path / "page-links")
    links.mint(folder)
    shared = "s" * 20
    path = os.path.join(folder, digest(shared))
    with open(path, "wb"):
        pass
    os.chmod(path, 0o644)  # readable by others: not one aipager made
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    linked = "l" * 20
    os.symlink(target, os.path.join(folder, digest(linked)))
    logins = _logins(folder, [os.stat(folder).st_mtime])
    assert logins.exchange(shared) is None and logins.exchange(linked) is None
    assert target.exists()
    assert links.take(folder, "../" + "a" * 61, 0.0) is None  # a name, never a path


def test_two_browsers_opening_one_link_at_once_sign_in_one(tmp_path):
    folder = str(tmp_path / "page-links")
    token = links.mint(folder)
    now = [os.stat(folder).st_mtime]
    got: list[str | None] = []
    barrier = threading.Barrier(8)

    def race() -> None:
        barrier.wait()
        got.append(_logins(folder, now).exchange(token))

    threads = [threading.Thread(target=race) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for c in got if c) == 1
