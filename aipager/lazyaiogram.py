"""Import aiogram without building all of its pydantic models up front.

aiogram 3 declares its Telegram types ``defer_build=True`` (build on first use),
then ``aiogram/types/__init__.py`` calls ``model_rebuild`` on every one of them
at import: 630-odd validators, each carrying copies of the types it nests, about
twice the memory and several times the seconds of this lazy import before the bot has
done anything (``python -m bench --only bot`` measures both).  The daemon needs a handful
(the updates it reads, what the methods it calls return).

``import_aiogram()`` runs that import with the loop's rebuild skipped, keeps the
names it would have resolved forward references with, and gives them to every
aiogram model as its parent namespace, so each builds, correctly, when first
used (``Response``, whose ``Response[T]`` is every method's answer, too).
``check()`` then validates a sample update, a sample answer and a request; if
anything about this does not hold (another aiogram or pydantic), the eager
build runs after all, logged, and the bot works as it would have (heavier).

Call ``import_aiogram()`` before anything imports aiogram (``aipager.bot``'s
``__init__`` does, and ``botapi.build_bot``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:
    from pydantic import BaseModel

log = logging.getLogger("aipager.bot")

#: what the deferred import captured: the types namespace and the models it skipped
_state: dict[str, Any] = {"namespace": None, "skipped": [], "lazy": False,
                          # (class, T) → Response[T], each made once (``_keep_responses``)
                          "responses": {}}


def import_aiogram() -> bool:
    """Import aiogram with its models' builds deferred; True when that worked."""
    import sys

    if "aiogram.types" in sys.modules:
        return _state["lazy"]  # imported before us (eagerly, or by an earlier call)
    from pydantic import BaseModel

    original = BaseModel.__dict__["model_rebuild"]
    skipped: list[tuple[type[BaseModel], Mapping[str, Any]]] = []

    def deferred(cls: type[BaseModel], *, force: bool = False, raise_errors: bool = True,
                 _parent_namespace_depth: int = 2,
                 _types_namespace: Mapping[str, Any] | None = None) -> bool | None:
        if _types_namespace is not None and cls.__module__.startswith("aiogram."):
            skipped.append((cls, _types_namespace))
            return None
        return original.__func__(cls, force=force, raise_errors=raise_errors,
                                 _parent_namespace_depth=_parent_namespace_depth + 1,
                                 _types_namespace=_types_namespace)

    # the patch this module exists for, undone below (mypy models neither a method
    # assigned to a class nor a classmethod object standing in for one)
    BaseModel.model_rebuild = classmethod(deferred)  # type: ignore[method-assign, assignment]
    try:
        import aiogram.methods  # noqa: F401
        import aiogram.types  # noqa: F401
    finally:
        BaseModel.model_rebuild = original  # type: ignore[method-assign]
    _keep_responses()
    if not skipped:
        return False  # this aiogram builds nothing at import: nothing to defer
    namespace = {"List": list, "Optional": Optional, "Union": Union, **skipped[0][1]}
    _state.update(namespace=namespace, skipped=[cls for cls, _ in skipped], lazy=True)
    try:
        _give_namespace(namespace)
        check()
    except Exception:  # noqa: BLE001 - any surprise: build everything as aiogram would
        log.warning("deferred aiogram model builds did not work here; building them all",
                    exc_info=True)
        eager()
        return False
    return True


def _keep_responses() -> None:
    """Keep every ``Response[T]`` once made: pydantic caches a generic model's
    parametrisations by weak reference only, and aiogram makes ``Response[T]`` afresh for
    each answer, so a model of an answer was built again, megabytes and 100 ms at a time,
    whenever the last one had been collected.  (A handful of T in a run.)"""
    from aiogram.methods.base import Response

    make = Response.__class_getitem__.__func__  # type: ignore[attr-defined]  # (a classmethod)
    kept = _state["responses"]

    def keep(cls: Any, params: Any) -> Any:
        try:
            return kept[(cls, params)]
        except KeyError:
            kept[(cls, params)] = made = make(cls, params)
            return made
        except TypeError:  # (unhashable parameters: as pydantic would)
            return make(cls, params)

    Response.__class_getitem__ = classmethod(keep)  # type: ignore[method-assign,assignment]


def answers_built() -> list[Any]:
    """Every ``T`` a ``Response[T]`` model was made for in this process."""
    return [params for _cls, params in _state["responses"]]


def adopt(cls: type[BaseModel]) -> None:
    """A model of aipager's own made from an aiogram one (``bot.rawmethods``) resolves
    its forward references as aiogram's deferred ones do."""
    if _state["namespace"] is not None:
        cls.__pydantic_parent_namespace__ = _state["namespace"]


def _models() -> list[type[BaseModel]]:
    from aiogram.methods.base import Response, TelegramMethod
    from aiogram.types.base import TelegramObject

    found: list[type[BaseModel]] = []
    # Response[T] (every method's answer) inherits Response's parent namespace
    stack: list[type[BaseModel]] = [TelegramObject, TelegramMethod, Response]
    while stack:
        cls = stack.pop()
        found.append(cls)
        stack.extend(cls.__subclasses__())
    return found


def _give_namespace(namespace: dict) -> None:
    # pydantic resolves a model's forward references with its parent namespace (and
    # its module's globals, where aiogram imports these names only for type checkers)
    for cls in _models():
        cls.__pydantic_parent_namespace__ = namespace


def check() -> None:
    """Raise unless a sample update and a sample response validate."""
    from aiogram.methods import SendMessage
    from aiogram.methods.base import Response
    from aiogram.types import Update, User

    sample = {"message_id": 1, "date": 0, "chat": {"id": 1, "type": "private"},
              "from": {"id": 1, "is_bot": False, "first_name": "a"}, "text": "hi",
              "entities": [{"type": "bold", "offset": 0, "length": 2}],
              "reply_to_message": {"message_id": 0, "date": 0,
                                   "chat": {"id": 1, "type": "private"}}}
    Update.model_validate({"update_id": 1, "message": sample})
    # (getMe's answer: the outbox's answers stay dicts, ``bot.rawmethods``, and a Message's
    # would cost megabytes to build here)
    Response[User].model_validate({"ok": True, "result": sample["from"]})
    SendMessage(chat_id=1, text="x").model_dump()


def eager() -> None:
    """What aiogram's import would have done: build every skipped model."""
    namespace = _state["namespace"]
    for cls in _state["skipped"]:
        cls.model_rebuild(_types_namespace=namespace, force=True)
    _state["lazy"] = False
