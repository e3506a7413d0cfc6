"""`aipager hub invite|rotate|hosts|revoke`: who may join this machine's hub."""

from __future__ import annotations

import os
import time

import typer

from aipager import config
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors, print_json

app = typer.Typer(help="Several machines, one chat: the hosts that join this hub.")


def _settings(env: dict[str, str]):  # -> HubSettings
    from aipager.hub import settings

    extra = config.load(env).extra if config.exists(env) else {}
    return settings.from_config(extra)


#: where ``invite`` and ``rotate`` write the credential file
OUT = typer.Option("", "--out", "-o", metavar="FILE",
                   help="Where to write the credential file (default: the hub's invites folder).")


@app.command("invite")
@handles_errors
def invite(
    name: str = typer.Argument(..., help="The host's name (lowercase letters, digits, - _)."),
    out: str = OUT,
    password: bool = typer.Option(False, "--password",
                                  help="A user and password instead of an NKey (for a server "
                                  "that takes only those)."),
) -> None:
    """Mint a credential for one host and print the command to run there.

    The credential is an NKey (the hub keeps only its public half) and, when the hub
    listens beyond loopback, the hub's TLS certificate.  Inviting a host again gives it
    a new one (the old file stops working).
    """
    _mint(name, out, nkey=not password)


@app.command("rotate")
@handles_errors
def rotate(
    name: str = typer.Argument(..., help="The host whose credential is replaced."),
    out: str = OUT,
) -> None:
    """Replace a host's credential: the old one stops working at once; the host keeps its
    name, so what the hub and the host have queued for each other stays."""
    from aipager.hub import creds

    entry = creds.load_hosts(_env())["hosts"].get(name)
    if entry is None:
        typer.echo(f"{name} is not a host of this hub (aipager hub invite {name} adds it).")
        raise typer.Exit(1)
    _mint(name, out, nkey="password" not in entry)
    typer.echo(f"The old credential of {name} no longer works: copy the new file to {name} "
               "and restart it with the command above.")


def _mint(name: str, out: str, *, nkey: bool) -> None:
    """A fresh credential for ``name`` (an NKey, or a password), written and announced."""
    from aipager.hub import creds, layout, server

    env = _env()
    hub = _settings(env)
    url = hub.invite_url()
    made = server.hub_tls(env, hub)
    who = creds.invite(env, name, url, nkey=nkey,
                       ca=made.ca_pem() if made is not None else "")
    path = out or os.path.join(layout.invites_dir(env), f"{name}.json")
    creds.write_creds(path, who)
    if hub.embedded:
        server.write_config(env, hub)
        running = server.reload_running(env)
        typer.echo(f"Host {name} may join{' now' if running else ' once the hub runs'} "
                   f"(credential: {path}, keep it secret).")
    else:
        perms = server.host_permissions(name)
        login = (f"the NKey {creds.host_nkeys(env)[name]}" if who.seed
                 else f"user {name} this password")
        typer.echo(f"Credential: {path}. The hub uses the server at {hub.url}: give "
                   f"{login} there with only these permissions:")
        typer.echo(f"  publish: {', '.join(perms['publish'])}")
        typer.echo(f"  subscribe: {', '.join(perms['subscribe'])}")
    typer.echo("Copy the file to the host, then run there:")
    typer.echo(f"  aipager start --join {url} --creds {os.path.basename(path)}")
    if url.startswith("nats://127.") or url.startswith("nats://localhost"):
        typer.echo("(the hub listens on loopback only: set hub.listen in the config for "
                   "other machines)")


@app.command("hosts")
@handles_errors
def hosts(as_json: bool = typer.Option(False, "--json", help="Machine-readable.")) -> None:
    """The hosts invited to this hub: online or since when not, and their aipager version
    (as the running hub last saved them; "hub not running" when it is not)."""
    from aipager.cli import saved
    from aipager.cli._daemon import daemon_pids
    from aipager.hub import creds

    env = _env()
    doc = creds.load_hosts(env)["hosts"]
    state, _problem = saved.load_state(env)
    running = bool(daemon_pids(env))
    facts = state.get("daemon") if isinstance(state, dict) else None
    hub = facts.get("hub") if isinstance(facts, dict) else None
    seen = hub.get("hosts") if isinstance(hub, dict) else {}
    listed = {}
    for name, entry in sorted(doc.items()):
        fact = seen.get(name) if isinstance(seen, dict) else None
        fact = fact if isinstance(fact, dict) else {}
        listed[name] = {"invited_at": entry.get("created_at"),
                        "online": bool(fact.get("online")) and running,
                        "last_seen": fact.get("last_seen") or None,
                        "version": fact.get("version") or None,
                        "refused": fact.get("refused") or 0}
    if as_json:
        print_json(listed)
        return
    if not listed:
        typer.echo("No host invited yet: aipager hub invite NAME")
    for name, row in listed.items():
        typer.echo(f"{name}  {_host_state(row, running)}")


def _host_state(row: dict, running: bool) -> str:
    """``online · aipager 0.1.0``, ``offline since 12:03``, ``never joined``."""
    if not running:
        state = "hub not running"
    elif row["online"]:
        state = "online"
    elif row["last_seen"]:
        state = "offline since " + time.strftime("%Y-%m-%d %H:%M",
                                                 time.localtime(float(row["last_seen"])))
    else:
        state = "never joined"
    refused = row.get("refused") or 0
    return state + (f" · aipager {row['version']}" if row["version"] else "") + (
        f" · refused {refused} command(s) the hub did not sign, or sent again: only the "
        "hub's login may publish commands" if refused else "")


@app.command("revoke")
@handles_errors
def revoke(name: str = typer.Argument(..., help="The host to remove.")) -> None:
    """Remove a host: its credential stops working at once."""
    from aipager.hub import creds, server

    env = _env()
    if not creds.revoke(env, name):
        typer.echo(f"{name} is not a host of this hub.")
        raise typer.Exit(1)
    hub = _settings(env)
    if hub.embedded:
        server.write_config(env, hub)
        server.reload_running(env)
    typer.echo(f"Host {name} removed.")
