"""Commands the hub signs, so that a host runs only what the hub made, once, while it is
fresh.

The broker (and anyone holding the hub's broker credential) can put a message on a host's
command stream, and can put one there again with a new message id.  The broker's own time
stamp says when it stored a message, not when the hub made it.  So each command carries:

- ``made``: the hub's clock when it made the command;
- ``sig``: an Ed25519 signature (an NKey of the hub's own, kept under the hub's
  state folder, 0600) over the host's name, the command's id, ``made``, ``ttl`` and the
  command itself.

``aipager hub invite`` writes the hub's public key into the host's credential file
(``hub_key``).  A host holding one runs a command only when its signature is the hub's,
it was made at most ``ttl`` (plus ``SKEW``) seconds ago, and its id has not run before
(``Replays``).  A host invited before there were signatures holds no key: it goes on as
before (a hub of this version still sends everything an older host reads).
"""

from __future__ import annotations

import collections
import os
import secrets
from typing import Any, Mapping

from aipager.hub import codec, layout
from aipager.proto import fsio
from aipager.proto.errors import ConfigError

#: how far the hub's and a host's clocks may disagree
SKEW = 30.0
#: command ids remembered (each for its ttl): far more than a minute of commands
REMEMBERED = 20_000


def nkeys_module() -> Any:
    """The nkeys package (the hub's extra), or a ConfigError that says how to install it
    (``creds`` asks here too)."""
    try:
        import nkeys
    except ImportError as exc:
        msg = "NKey credentials need the nkeys package: pip install 'aipager[hub]'"
        raise ConfigError(msg) from exc
    return nkeys


def hub_seed(env: Mapping[str, str]) -> str:
    """The hub's signing seed, made on first use (0600, never leaves the hub)."""
    path = os.path.join(layout.hub_dir(env), "signing.json")
    doc = fsio.read_json_own(path)
    if isinstance(doc, dict) and isinstance(doc.get("seed"), str) and doc["seed"]:
        return doc["seed"]
    nkeys = nkeys_module()
    seed = nkeys.encode_seed(secrets.token_bytes(32), nkeys.PREFIX_BYTE_OPERATOR).decode("ascii")
    layout.make_private(layout.hub_dir(env))
    fsio.write_json_atomic(path, {"seed": seed}, mode=0o600)
    return seed


def public_key(seed: str) -> str:
    return nkeys_module().from_seed(bytearray(seed.encode("ascii"))).public_key.decode("ascii")


def _verify_key(public: str) -> Any:
    """An NKey public key (base32: prefix byte, 32 key bytes, CRC-16) as a verifier
    (``nkeys`` makes none from a public key alone; PyNaCl, which it uses, does)."""
    import base64

    import nacl.signing

    text = public.strip()
    raw = base64.b32decode(text + "=" * (-len(text) % 8))
    nkeys = nkeys_module()
    if len(raw) != 35 or nkeys.crc16(raw[:-2]) != int.from_bytes(raw[-2:], "little"):
        msg = "not an NKey public key"
        raise ValueError(msg)
    return nacl.signing.VerifyKey(raw[1:33])


def _signed_bytes(host: str, doc: Mapping[str, Any]) -> bytes:
    return codec.dumps({"host": host, "id": doc.get("id"), "made": doc.get("made"),
                        "ttl": doc.get("ttl"), "cmd": doc.get("cmd")})


def sign(seed: str, host: str, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (``id``, ``made``, ``ttl``, ``cmd``) with its ``sig``."""
    key = nkeys_module().from_seed(bytearray(seed.encode("ascii")))
    return {**doc, "sig": key.sign(_signed_bytes(host, doc)).hex()}


def why_refused(hub_key: str, host: str, doc: Mapping[str, Any], now: float,
                replays: Replays) -> str:
    """Why a host holding the hub's public key must not run ``doc``; "" to run it."""
    sig, made, ttl = doc.get("sig"), doc.get("made"), doc.get("ttl")
    if not isinstance(sig, str) or not isinstance(made, (int, float)) \
            or not isinstance(ttl, (int, float)):
        return "unsigned"
    try:
        _verify_key(hub_key).verify(_signed_bytes(host, doc), bytes.fromhex(sig))
    except Exception:  # noqa: BLE001 - any failure to verify is a forgery
        return "forged"
    if now - float(made) > float(ttl) + SKEW or float(made) - now > SKEW:
        return "expired"
    if not replays.first(str(doc.get("id")), float(made) + float(ttl) + SKEW, now):
        return "replayed"
    return ""


class Replays:
    """Command ids already run, each kept until it would be refused as expired anyway."""

    def __init__(self) -> None:
        self._until: collections.OrderedDict[str, float] = collections.OrderedDict()

    def first(self, cmd_id: str, until: float, now: float) -> bool:
        """Whether ``cmd_id`` is seen for the first time (it is remembered until ``until``)."""
        while self._until and (next(iter(self._until.values())) < now
                               or len(self._until) > REMEMBERED):
            self._until.popitem(last=False)
        if cmd_id in self._until:
            return False
        self._until[cmd_id] = until
        return True


__all__ = ["Replays", "SKEW", "hub_seed", "public_key", "sign", "why_refused"]
