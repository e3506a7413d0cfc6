"""Sign-in links made outside the daemon: ``aipager page`` asks for a new one.

The link ``aipager start`` prints works once, and a daemon run as a service prints it where
nobody reads it; so the command line can make another without talking to the daemon. It
keeps the token's sha256 as an empty file in a private folder of the owner's state
(``paths.page_links_dir``, 0700); the page's ``Logins`` takes it from there when the link
is opened: the file is removed as it is taken (``unlink`` succeeds once, so a link opened
twice at the same moment signs in one browser), and one older than ``LINK_TTL`` is refused.
Only the owner can write there, and the owner is who the page signs in.
"""

from __future__ import annotations

import os
import secrets
import stat
import time

from aipager.proto import fsio, trust
from aipager.web.auth import digest

#: how long a link ``aipager page`` made works: it is printed on a terminal and opened at once
LINK_TTL = 15 * 60


def mint(folder: str, now: float | None = None) -> str:
    """A new one-time token, kept in ``folder`` for the page to take; expired ones are swept.

    Raises:
        OSError / trust.UnsafePath: the folder cannot be made ours and private.
    """
    trust.make_folder(os.path.dirname(folder))
    fsio.ensure_private_dir(folder)
    sweep(folder, time.time() if now is None else now)
    token = secrets.token_urlsafe(24)
    fsio.write_atomic(os.path.join(folder, digest(token)), b"", 0o600)
    return token


def take(folder: str, hashed: str, now: float) -> float | None:
    """Until when the link kept as ``hashed`` works, removing it (a link is used once); None
    when there is none, it is not an owner-only file of ours, or it cannot be removed."""
    if len(hashed) != 64 or not all(c in "0123456789abcdef" for c in hashed):
        return None  # a name in the folder, never a path
    path = os.path.join(folder, hashed)
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        os.unlink(path)  # the claim: of two takers, one removes it
    except OSError:
        return None
    until = st.st_mtime + LINK_TTL
    return until if until >= now else None


def sweep(folder: str, now: float) -> None:
    """Remove the links that no longer work."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        try:
            if os.lstat(path).st_mtime + LINK_TTL < now:
                os.unlink(path)
        except OSError:
            continue
