"""The label a new member gets: the name they have, unless it would pass for another
member, a role or a mention (then their id).  Shared by the service, which decides it when
a role is handed out, and the chat's ``/join``."""

from __future__ import annotations

import unicodedata
from typing import Any

from aipager import config
from aipager.locales import N_
from aipager.proto.errors import AipagerError

#: characters that show as nothing yet are letters or symbols to Unicode (fillers, blank braille)
_BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def folded(label: str) -> str:
    """``label`` as a reader compares it: compatibility forms (NFKC), accents, invisible,
    format and space characters, and case all ignored."""
    text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", label))
    return "".join(c for c in text if c not in _BLANKS
                   and unicodedata.category(c)[0] not in "CZ"
                   and unicodedata.category(c) not in ("Mn", "Me")).casefold()


def lookalike(wanted: str, user_id: int, cfg: config.Config, env: Any) -> str:
    """What ``wanted`` would pass for as ``user_id``'s label, or "" when it is safe."""
    from aipager.policy import model

    seen = folded(wanted)
    if not seen:
        return N_("nothing")
    if seen.startswith("@"):
        return N_("a mention")
    try:
        roles = set(model.load_policy(env).roles)
    except AipagerError:
        roles = set()
    if seen in roles | set(config.ROLES) | {"guest"}:
        return N_("a role")
    if any(m.id != user_id and seen in (folded(m.label).lstrip("@"), str(m.id))
           for m in cfg.members):
        return N_("another member")
    return ""


def label_for(user_id: int, wanted: str, cfg: config.Config, env: Any) -> tuple[str, str]:
    """The label ``user_id`` gets for the name ``wanted``: (label, what the name looked
    like, or "" when it was taken)."""
    why = lookalike(wanted, user_id, cfg, env) if wanted else ""
    return (str(user_id) if why or not wanted else wanted), why


__all__ = ["folded", "label_for", "lookalike"]
