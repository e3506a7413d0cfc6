"""An MCP server's form on the page (``POST /api/form``): shown with its fields while the
hook waits, answered through the service with the values typed as the form asks, refused
in words, and a bad body a 400 that says what is wrong."""

from __future__ import annotations

import json
import os

import pytest

from aipager.port.model import Request, State
from aipager.port.outputs import Form
from aipager.port.backend import ByHook, Refused
from aipager.port import forms

from .conftest import READER_ID, init_data

S = "claude-jim"
KEY = "f:0123456789abcdef0123456789abcdef"
FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "elicitation.json")


def _fields() -> list[dict]:
    with open(FIXTURE, encoding="utf-8") as fh:
        schema = json.load(fh)["requested_schema"]
    return [f.as_json() for f in forms.fields_of(schema) or ()]


def _open_form(web, *, waiting: bool = True) -> None:
    """A session with the recorded form open (``waiting``: its hook still waits)."""
    web.port.add_session(S, State.WAITING)
    fields = _fields()
    web.port.sessions.get(S).requests.append(Request(
        key=KEY, kind="form", tool="mcp__releaser__ask", opened_at=1.0, detail="releaser",
        description="Where should the release go?", reply_addr="/tmp/hook.sock" if waiting else "",
        form=fields, terminal_only=False))
    text = "📋 jim · releaser asks: Where should the release go?"
    if not waiting:
        text += "\n⌨️ Its form is in the terminal: answer it at the computer."
    web.live.emit(Form(session=S, text=text, key=KEY, server="releaser",
                       message="Where should the release go?",
                       fields=fields if waiting else [], reply_addr="/tmp/hook.sock" if waiting
                       else ""))


async def test_an_open_form_comes_with_its_fields(web):
    await web.sign_in()
    _open_form(web)
    (need,) = (await (await web.get("/api/state")).json())["needs"]
    assert (need["kind"], need["key"], need["server"]) == ("form", KEY, "releaser")
    assert need["message"] == "Where should the release go?" and need["answerable"] is True
    assert need["text"] == "📋 jim · releaser asks: Where should the release go?"
    assert [f["name"] for f in need["fields"]] == ["channel", "note", "replicas", "notify"]
    channel, _note, replicas, notify = need["fields"]
    assert (channel["kind"], channel["options"], channel["labels"], channel["required"]) == (
        "enum", ["stable", "beta", "nightly"], ["Stable", "Beta", "Nightly"], True)
    assert (replicas["kind"], replicas["minimum"], replicas["maximum"]) == ("integer", 1, 9)
    assert (notify["kind"], notify["default"]) == ("boolean", True)
    assert need["refused"] is None
    state = await (await web.get("/api/sessions")).json()
    assert state[0]["waiting_for"] == "form"


async def test_a_form_the_page_cannot_answer_says_so_with_no_fields(web):
    await web.sign_in()
    _open_form(web, waiting=False)
    (need,) = (await (await web.get(f"/api/sessions/{S}")).json())["needs"]
    assert need["answerable"] is False and need["fields"] == []
    assert "answer it at the computer" in need["text"]
    # in another language the words are rendered again in it
    (need,) = (await (await web.get("/api/state", **{"X-Aipager-Lang": "pt-BR"})).json())["needs"]
    assert need["fields"] == [] and need["text"].startswith("📋 jim · releaser")


async def test_accept_reaches_the_service_with_the_typed_values(web):
    await web.sign_in()
    _open_form(web)
    web.port.handler = lambda name, args, kw: ByHook() if name == "answer_form" else None
    content = {"channel": "beta", "note": "ship it", "replicas": 3, "notify": False}
    got = await web.post("/api/form", {"session": S, "key": KEY, "action": "accept",
                                       "content": content})
    assert got.status == 200
    assert await got.json() == {"ok": True, "message": "Sent.", "outcome": None}
    ((session, key, who, action, sent), _kw), = web.port.calls("answer_form")
    assert (session, key, who.label, action) == (S, KEY, "@web", "accept")
    assert sent == content and type(sent["replicas"]) is int and sent["notify"] is False


@pytest.mark.parametrize(("action", "words"), [("decline", "Declined."),
                                               ("cancel", "Cancelled.")])
async def test_decline_and_cancel_send_no_values(web, action, words):
    await web.sign_in()
    _open_form(web)
    web.port.handler = lambda name, args, kw: ByHook() if name == "answer_form" else None
    got = await (await web.post("/api/form", {"session": S, "key": KEY, "action": action,
                                              "content": {"channel": "beta"}})).json()
    assert got["ok"] is True and got["message"] == words
    ((_s, _k, _who, sent_action, sent), _kw), = web.port.calls("answer_form")
    assert (sent_action, sent) == (action, {})


async def test_a_value_the_form_does_not_take_is_refused_in_words(web):
    await web.sign_in()
    _open_form(web)
    web.port.handler = lambda name, args, kw: (
        Refused("Replicas: at most 9") if name == "answer_form" else None)
    got = await web.post("/api/form", {"session": S, "key": KEY, "action": "accept",
                                       "content": {"channel": "beta", "replicas": 12}})
    assert got.status == 409  # as every acting call that did not happen (the page reads it)
    assert await got.json() == {"ok": False, "message": "Could not answer: Replicas: at most 9",
                                "outcome": None}


async def test_a_reader_may_not_answer_and_nothing_reaches_the_daemon(web):
    await web.sign_in()
    _open_form(web)
    reader = {"Authorization": "tma " + init_data({"id": READER_ID, "first_name": "Reader"})}
    (need,) = (await (await web.get("/api/state", **reader)).json())["needs"]
    assert "may not answer" in need["refused"]
    got = await web.post("/api/form", {"session": S, "key": KEY, "action": "decline"}, **reader)
    assert got.status == 409 and "may not answer" in (await got.json())["message"]
    assert web.port.calls("answer_form") == []


async def test_a_form_of_no_session_is_no_longer_open(web):
    await web.sign_in()
    got = await web.post("/api/form", {"session": "nope", "key": KEY, "action": "cancel"})
    assert (await got.json())["message"] == "This form is no longer open."


@pytest.mark.parametrize(("body", "says"), [
    ({"session": S, "key": KEY, "action": "maybe"}, "action: one of accept, decline, cancel"),
    ({"session": S, "key": KEY}, "action: one of accept, decline, cancel"),
    ({"session": S, "key": KEY, "action": "accept", "content": ["beta"]},
     "content must be an object"),
    ({"session": S, "key": KEY, "action": "accept", "content": "channel=beta"},
     "content must be an object"),
])
async def test_a_bad_body_is_a_400_that_says_why(web, body, says):
    await web.sign_in()
    _open_form(web)
    got = await web.post("/api/form", body)
    assert got.status == 400 and says in await got.text()
    assert web.port.calls("answer_form") == []


async def test_not_json_is_a_400(web):
    await web.sign_in()
    got = await web.client.post("/api/form", data=b"[1,", headers=web.headers(
        Origin=web.origin, **{"Content-Type": "application/json"}))
    assert got.status == 400
