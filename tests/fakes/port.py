"""A fake daemon port for the chat's tests, in the spirit of httpx's ``MockTransport``.

``FakePort`` is a ``DaemonPort`` (``aipager.port.backend``) with no daemon behind it: a
real ``Registry`` holds the sessions a test sets up, every call is recorded in
``asked``, and one ``handler(name, args, kwargs)`` decides what a call returns (an
``Outcome`` for answers; None means the default: ``Gone()`` for answers, a session
name for ``start_session``, nothing otherwise).  A handler that raises makes the call
raise, as a failing daemon would.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

from aipager.port.model import Author, PromptNote, State
from aipager.port.backend import AnswerKind, Gone, HostView, Outcome, Who
from aipager.daemon.registry import Registry
from aipager.port.results import Diff

Handler = Callable[[str, tuple, dict], Any]


class FakePort:
    def __init__(self, env: Mapping[str, str], handler: Handler | None = None) -> None:
        self.env = dict(env)
        self.started_at = time.time() - 1
        self.registry = Registry()
        self.handler: Handler = handler or (lambda name, args, kwargs: None)
        #: every call: (method name, positional args, keyword args)
        self.asked: list[tuple[str, tuple, dict]] = []
        self.previews = False
        self.facts: list[Callable[[], dict[str, Any]]] = []
        #: what ``hosts`` shows (a hub's machines)
        self.machines: list[HostView] = []
        #: the daemon shuts down (``DaemonPort.stopping``)
        self.stopping = False

    def _ask(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self.asked.append((name, args, kwargs))
        return self.handler(name, args, kwargs)

    def calls(self, name: str) -> list[tuple[tuple, dict]]:
        return [(a, k) for n, a, k in self.asked if n == name]

    def add_session(self, name: str, state: State = State.READY) -> None:
        sess = self.registry.ensure(name)
        self.registry.set_state(sess, state)

    @property
    def sessions(self) -> Registry:
        return self.registry

    #: a hub's hosts (``daemon.port.Remote``), when a test sets one
    remote: Any = None

    def queue_chat_message(self, session: str, msg_id: int | str, text: str, *,
                           chat_id: int | str = "", sender: str = "", held: bool = False,
                           held_for: str = "task", author: Author | None = None) -> None:
        # kept in the registry as the daemon keeps it (a release reads its author there)
        self.registry.queue_message(session, str(msg_id), text, chat_id=str(chat_id),
                                    sender=sender, held=held, held_for=held_for, author=author)
        self._ask("queue_chat_message", session, msg_id, text, chat_id=chat_id, sender=sender,
                  held=held, held_for=held_for)

    def drop_chat_message(self, session: str, msg_id: int | str) -> None:
        self._ask("drop_chat_message", session, msg_id)

    async def answer_request(self, session: str, key: str, kind: AnswerKind, who: Who, *,
                             reason: str = "", suggestion: int | None = None,
                             edit: str | None = None) -> Outcome:
        got = self._ask("answer_request", session, key, kind, who, reason=reason,
                        suggestion=suggestion, **({"edit": edit} if edit is not None else {}))
        return Gone() if got is None else got

    async def answer_question(self, session: str, key: str, who: Who,
                              answers: Sequence[Any] | None) -> Outcome:
        got = self._ask("answer_question", session, key, who, answers)
        return Gone() if got is None else got

    async def answer_form(self, session: str, key: str, who: Who, action: str,
                          content: Any) -> Outcome:
        got = self._ask("answer_form", session, key, who, action, dict(content))
        return Gone() if got is None else got

    async def start_session(self, label: str, *, resume_id: str = "", cwd: str = "",
                            mode: str = "", agent: str = "") -> str:
        got = self._ask("start_session", label, resume_id=resume_id, cwd=cwd,
                        **({"mode": mode} if mode else {}), **({"agent": agent} if agent else {}))
        return got or f"claude-{label}"

    async def session_changes(self, session: str, *, role: str,
                              user_id: int | None) -> Diff:
        got = self._ask("session_changes", session, role=role, user_id=user_id)
        return Diff() if got is None else got

    async def stop_session(self, session: str) -> bool:
        return bool(self._ask("stop_session", session))

    async def kill_session(self, label: str) -> bool:
        return bool(self._ask("kill_session", label))

    async def switch_model(self, session: str, model: str) -> None:
        self._ask("switch_model", session, model)

    async def type_prompt(self, session: str, text: str, *, note: PromptNote,
                          submitting: Callable[[], None] | None = None) -> None:
        if submitting is not None:
            submitting()
        self._ask("type_prompt", session, text, note=note.args())

    async def type_text(self, session: str, text: str) -> None:
        self._ask("type_text", session, text)

    async def screen(self, session: str, wait: float = 0.0) -> Any:
        """None (nothing readable) unless the handler says what the screen shows."""
        return self._ask("screen", session)

    async def answer_dialog(self, session: str, kind: Any, pick: Any) -> bool:
        return bool(self._ask("answer_dialog", session, kind, pick))

    def audit_action(self, action: str, who: Who, **fields: Any) -> None:
        self._ask("audit_action", action, who, **fields)

    def set_previews(self, on: bool) -> None:
        self.previews = on

    def add_facts(self, facts: Callable[[], dict[str, Any]]) -> None:
        self.facts.append(facts)

    def hosts(self) -> Sequence[HostView]:
        return tuple(self.machines)
