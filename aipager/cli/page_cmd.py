"""`aipager page`: a new sign-in link to the running daemon's web page.

The link ``aipager start`` prints works once (and a daemon run as a service prints it to its
journal); this one works once too, for ``links.LINK_TTL``, in any browser of this machine.
"""

from __future__ import annotations

import typer

from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors
from aipager.cli._daemon import daemon_pids
from aipager.cli.saved import load_state
from aipager.cli.status_cmd import page_url
from aipager.proto import paths
from aipager.proto.errors import DaemonError


@handles_errors
def page() -> None:
    """Print a new sign-in link to the page (it works once, for 15 minutes)."""
    from aipager.web import links

    env = _env()
    if not daemon_pids(env):
        msg = "the daemon is not running; `aipager start` starts it and prints a link"
        raise DaemonError(msg)
    state, problem = load_state(env)
    url = page_url(state)
    if url is None:
        msg = (problem or "the daemon's page is not listening (see `aipager status`, and "
               "AIPAGER_WEB_PORT)")
        raise DaemonError(msg)
    token = links.mint(paths.page_links_dir(env))
    typer.echo(f"Open {url}?token={token}")
