"""Names on the broker: hosts, subjects, streams, consumers, and ``name@host``.

Each host has its own subjects and may use no other (``server.render_config``):

- ``aipager.<host>.out``: its daemon's outputs and its answers to commands
  (stream ``AIPAGER_OUT``, kept, deduplicated by ``Nats-Msg-Id``);
- ``aipager.<host>.state``: its sessions, latest only (stream ``AIPAGER_STATE``);
- ``aipager.<host>.cmd``: the commands addressed to it (stream ``AIPAGER_CMD``),
  read through the consumer ``cmd-<host>`` the hub made;
- ``_INBOX_<host>.>``: its reply inbox (JetStream acknowledgements, fetches).

On the hub a host's session ``claude-jim`` is ``claude-jim@box``; its label is
``jim``, or ``jim@box`` when another session is called ``jim`` too.
"""

from __future__ import annotations

import re

from aipager.proto.errors import ConfigError

OUT_STREAM = "AIPAGER_OUT"
CMD_STREAM = "AIPAGER_CMD"
STATE_STREAM = "AIPAGER_STATE"
#: the one consumer of every host's outputs before each host had its own (``out_consumer``):
#: deleted when the hub sets up
OLD_OUT_CONSUMER = "hub-out"
#: the hub's consumer of every host's latest sessions (made anew at each start)
HUB_STATE_CONSUMER = "hub-state"
#: the NATS user the hub itself connects as
HUB_USER = "hub"

_HOST = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


def check_host(name: str) -> str:
    """Return ``name`` if it can name a host (a NATS subject token and a user name).

    Raises:
        ConfigError: not 1-32 of lowercase letters, digits, ``-``, ``_`` (first a
            letter or digit), or the hub's own user name.
    """
    if not isinstance(name, str) or not _HOST.match(name) or name == HUB_USER:
        msg = (f"{name!r} cannot name a host: use 1-32 lowercase letters, digits, '-' or '_' "
               f"(starting with a letter or digit), and not {HUB_USER!r}")
        raise ConfigError(msg)
    return name


def out_subject(host: str) -> str:
    return f"aipager.{host}.out"


def state_subject(host: str) -> str:
    return f"aipager.{host}.state"


def cmd_subject(host: str) -> str:
    return f"aipager.{host}.cmd"


def cmd_consumer(host: str) -> str:
    return f"cmd-{host}"


def out_consumer(host: str) -> str:
    """The hub's consumer of one host's outputs (each host read in its own order)."""
    return f"out-{host}"


def inbox_prefix(host: str) -> str:
    return f"_INBOX_{host}"


def host_of_subject(subject: str) -> str | None:
    """The host a subject ``aipager.<host>.<kind>`` belongs to (None for anything else).

    The server lets a host publish only on its own subjects, so on the hub the
    subject, not the payload, says which host spoke.
    """
    parts = subject.split(".")
    if len(parts) != 3 or parts[0] != "aipager" or not _HOST.match(parts[1]):
        return None
    return parts[1]


def qualify(session: str, host: str) -> str:
    """A host's internal session name as the hub knows it: ``claude-jim@box``."""
    return f"{session}@{host}"


def split(name: str) -> tuple[str, str | None]:
    """``claude-jim@box`` → (``claude-jim``, ``box``); a name without a host → (name, None).

    Session names never hold ``@`` (``dtach.check_name``), so the last one splits.
    """
    bare, sep, host = name.rpartition("@")
    if not sep or not bare or not _HOST.match(host):
        return name, None
    return bare, host
