"""What every surface may ask of aipager, and what comes back: one record per use case.

The chat, the page, voice and a hub's hosts build a command (``commands``) naming who
asks (``who.Person``, with the rights their role gives them) and hand it to the
service's ``ask`` (``aipager.daemon.service``); the answer is one of the frozen result
records (``results``), which each surface renders in the person's language
(``aipager.clients.words``).  The rights are decided in one place (``rights.check``),
inside the service: no surface decides a right by itself.

This package imports nothing of aipager's: it sits below the daemon and every client.
"""

from aipager.port.commands import (AnswerQuestion, AnswerRequest, Command, CompactSession,
                                   KillSession, Mode, ResumeSession, SendPrompt, ShowChanges,
                                   StartSession, StopTask, SwitchModel, TrustFolder)
from aipager.port.results import (Already, ByHook, ByKeys, Changes, Compacting, Declined, Ended,
                                  Failed, Gone, Held, InTerminal, KeysFailed, Outcome, Refused,
                                  Result, Resumed, Started, Stopping, Switching, Trusted, Typed)
from aipager.port.rights import Reason, check
from aipager.port.who import Person

__all__ = [
    "Already", "AnswerQuestion", "AnswerRequest", "ByHook", "ByKeys", "Changes", "Command",
    "CompactSession", "Compacting", "ResumeSession", "Resumed", "SwitchModel", "Switching",
    "Declined", "Ended", "Failed", "Gone", "Held", "InTerminal", "KeysFailed", "KillSession",
    "Mode", "Outcome", "Person", "Reason", "Refused", "Result", "SendPrompt", "ShowChanges",
    "StartSession", "Started", "StopTask", "Stopping", "Trusted", "TrustFolder", "Typed",
    "check",
]
