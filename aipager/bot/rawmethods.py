"""``sendMessage`` and ``editMessageText`` whose answers stay dicts.

The outbox needs a sent message's id and nothing else, but aiogram validates every
answer into its ``Message`` model: ``Response[Message]`` is a pydantic model of ~200
nested types, built at the first send (about 3 MB), and ``Response[Message | bool]``
(an edit's answer) another, each kept only while referenced, so built again and again
(100–160 ms of the event loop each time).  These subclasses answer with the JSON's dict,
as ``polling.RawUpdates`` does for updates; the request they send is aiogram's own.
"""

from __future__ import annotations

from typing import Any, Union

from aiogram.methods import EditMessageText, SendMessage

from aipager import lazyaiogram


class SendMessageRaw(SendMessage):
    __returning__ = dict[str, Any]


class EditMessageTextRaw(EditMessageText):
    # (``Union``: aiogram's Response builds its model from this at run time)
    __returning__ = Union[dict[str, Any], bool]  # noqa: UP007


for _cls in (SendMessageRaw, EditMessageTextRaw):
    lazyaiogram.adopt(_cls)
