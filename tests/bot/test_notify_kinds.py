"""Every kind of the daemon's outputs reaches its own handler in the chat (``ChatNotifier._show``
dispatches with ``match``; an output kind the chat forgot would vanish silently)."""

from __future__ import annotations

import types

import pytest
from hub.test_codec import SAMPLES

from aipager.bot.notify import ChatNotifier
from aipager.port.outputs import KINDS, Prompted


def test_every_output_kind_has_a_sample():
    assert {type(s) for s in SAMPLES} == {*KINDS.values(), Prompted}


@pytest.mark.parametrize("out", SAMPLES, ids=lambda o: o.kind)
def test_each_output_goes_to_its_own_handler(out):
    called: list[str] = []

    def recorder(name: str):
        return lambda *args: called.append(name)

    handlers = {name: recorder(name) for name in dir(ChatNotifier) if name.startswith("_on_")}
    ChatNotifier._show(types.SimpleNamespace(**handlers), out, None, 1)
    assert called == [f"_on_{out.kind}"]
