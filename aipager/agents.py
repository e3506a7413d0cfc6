"""The coding agents a session can run, and what differs between them: one record each.

Everything else (the registry, the service, rights, the floor, the chat, the page, the hub)
serves a session without knowing which agent it runs.  What does differ is here:

- the program and how its arguments are made (``argv``): Claude Code gets its teammates in
  process; Codex gets ``--no-daemon``, so its hooks run under this session's own TUI (a
  shared app-server runs hooks with the environment of whichever TUI started it, and would
  tag another session's events with this one's name);
- how a session's permission mode maps onto the agent's flags (``mode_args``);
- which characters its input line reads as more than text, beyond what every encoding
  makes inert (``inert``: Codex opens a picker on ``$``);
- whether a tap may answer its permission dialog with keys once its hook stopped waiting
  (``dialog_keys``): only where aipager has read that dialog on the real program;
- whether a hook says it started (``announces_start``): Claude Code fires SessionStart at
  launch; Codex fires it with its first prompt, so its session is known ready from its
  screen (the input line drawn).

Which agent a running session runs is read from its process (``of_command``), not assumed
from how it was started: a session started by hand is known by what actually runs in it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from aipager.proto.errors import SessionError


@dataclass(frozen=True)
class Agent:
    """One kind of coding agent."""

    #: its name in commands and saved state (``--agent codex``)
    name: str
    #: how people call it
    title: str
    #: the program's name on PATH, and the variable that pins it
    program: str
    binary_env: str
    #: the arguments every session of it gets (unless the person chose otherwise)
    always: tuple[str, ...] = ()
    #: the option names that count as the person's own choice of ``always``
    chosen_by: tuple[str, ...] = ()
    #: a permission mode (``port.commands.Mode`` value) → its flags
    modes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: characters its input line acts on that are made inert in a chat message
    inert: str = ""
    #: whether its permission dialog's keys are known (a late tap may press them)
    dialog_keys: bool = False
    #: whether a hook fires when it has started (else its screen tells)
    announces_start: bool = True
    #: the arguments that resume conversation ``{id}`` (its SessionStart's ``session_id``)
    resume: tuple[str, ...] = ("--resume", "{id}")

    def binary(self, env: Mapping[str, str]) -> str:
        """The program: ``$<binary_env>``, else on PATH.

        Raises:
            SessionError: not found.
        """
        explicit = env.get(self.binary_env)
        if explicit:
            return explicit
        found = shutil.which(self.program, path=env.get("PATH"))
        if found:
            return found
        msg = (f"{self.title} (`{self.program}`) not found on PATH; install it or pin it with "
               f"{self.binary_env}=/path/to/{self.program}")
        raise SessionError(msg)

    def args(self, args: Sequence[str]) -> list[str]:
        """The session's arguments: the person's, plus ``always`` unless they chose it."""
        chosen = any(a == opt or a.startswith(opt + "=") for a in args for opt in self.chosen_by)
        return [*args] if chosen or not self.always else [*args, *self.always]

    def resume_args(self, conversation: str) -> tuple[str, ...]:
        """The arguments that resume ``conversation`` ("": none)."""
        if not conversation:
            return ()
        return tuple(conversation if a == "{id}" else a for a in self.resume)

    def mode_args(self, mode: str) -> tuple[str, ...]:
        """The flags of permission mode ``mode`` ("" is the agent's own default).

        Raises:
            ValueError: a mode this agent has no equivalent of.
        """
        if not mode:
            return ()
        if mode not in self.modes:
            msg = f"{self.title} has no {mode!r} mode"
            raise ValueError(msg)
        return self.modes[mode]


CLAUDE = Agent(
    name="claude", title="Claude Code", program="claude", binary_env="AIPAGER_CLAUDE_BIN",
    # agent-team teammates in process: their permission requests then reach the lead's
    # hooks (answered from the phone); in tmux panes they fire none
    always=("--teammate-mode", "in-process"), chosen_by=("--teammate-mode",),
    modes={m: ("--permission-mode", m) for m in ("auto", "default", "acceptEdits", "plan")},
    dialog_keys=True,
)

CODEX = Agent(
    name="codex", title="Codex", program="codex", binary_env="AIPAGER_CODEX_BIN",
    always=("--no-daemon",), chosen_by=("--no-daemon", "--remote"),
    # Codex asks only with approval policy on-request; its sandbox decides what runs unasked
    modes={
        "default": ("--ask-for-approval", "on-request", "--sandbox", "read-only"),
        "acceptEdits": ("--ask-for-approval", "on-request", "--sandbox", "workspace-write"),
        "auto": ("--ask-for-approval", "on-request", "--sandbox", "workspace-write"),
        "plan": ("--ask-for-approval", "on-request", "--sandbox", "read-only"),
    },
    # $name opens its skill picker, whose Enter inserts instead of sending
    inert="$",
    # SessionStart comes with the first prompt (measured on 0.169.0), not at launch
    announces_start=False,
    # a subcommand, which takes the same options (``codex resume --help``, 0.169.0)
    resume=("resume", "{id}"),
)

AGENTS: dict[str, Agent] = {a.name: a for a in (CLAUDE, CODEX)}


def get(name: str) -> Agent:
    """The agent called ``name`` ("" is Claude Code).

    Raises:
        ValueError: no such agent.
    """
    found = AGENTS.get(name or CLAUDE.name)
    if found is None:
        msg = f"unknown agent {name!r}: one of {', '.join(AGENTS)}"
        raise ValueError(msg)
    return found


def of_command(argv: Sequence[str]) -> Agent | None:
    """The agent a process runs, from its command line (``/proc/PID/cmdline``): the program
    or the script a runtime runs (Codex from npm is ``node …/bin/codex.js``)."""
    for arg in argv[:2]:
        base = os.path.basename(arg)
        for agent in AGENTS.values():
            if base == agent.program or base.startswith(agent.program + "."):
                return agent
    return None


__all__ = ["AGENTS", "CLAUDE", "CODEX", "Agent", "get", "of_command"]
