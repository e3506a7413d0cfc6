"""Tunables the daemon reads from its environment, resolved once at start."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


def _seconds(env: Mapping[str, str], names: tuple[str, ...], default: float) -> float:
    # The first name is current; later ones are old names still accepted.
    for name in names:
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if value > 0:
            return value
    return default


@dataclass(frozen=True, slots=True)
class Knobs:
    """Limits and timeouts of the session model.

    Attributes:
        bg_shell_max_track: seconds a background command is followed without seeing its end.
        subagent_silence: seconds without any event carrying an agent's id before it is dropped.
        resume_grace: seconds a paused agent may stay silent after its last child ended
            before it stops counting as running (never shown finished).
        rows_cap: tool rows kept per session (most recent).
        agents_cap: agents kept per session.
        bg_cap: background commands kept per session.
        delivered_cap: delivered-answer digests kept per session.
        dedup_window: seconds within which a byte-identical datagram is dropped as a repeat.
        diff_previews: emit a diff output for Write/Edit (a chat setting, off by default).
        orphan_cap: sessions never seen with a dtach socket kept at most (``limits``).
        orphan_idle: seconds without an event after which such a session is forgotten.
    """

    bg_shell_max_track: float = 7200.0
    subagent_silence: float = 1800.0
    resume_grace: float = 120.0
    rows_cap: int = 200
    agents_cap: int = 100
    bg_cap: int = 50
    delivered_cap: int = 64
    dedup_window: float = 3.0
    diff_previews: bool = False
    orphan_cap: int = 200
    orphan_idle: float = 3 * 24 * 3600.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Knobs:
        """Read the documented environment variables; invalid values keep the default."""
        return cls(
            bg_shell_max_track=_seconds(env, ("AIPAGER_BG_SHELL_MAX_TRACK",), 7200.0),
            subagent_silence=_seconds(
                env, ("AIPAGER_SUBAGENT_SILENCE", "AIPAGER_SUBAGENT_TTL"), 1800.0
            ),
        )
