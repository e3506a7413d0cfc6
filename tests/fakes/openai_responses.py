"""A scripted stand-in for the OpenAI Responses API, for driving the real Codex CLI offline.

Codex reaches it through a model provider of its config.toml (``provider_config``)::

    model = "gpt-5.5"                  # a model Codex knows: its shell and apply_patch tools
    model_provider = "fake"
    [model_providers.fake]
    name = "fake"
    base_url = "http://127.0.0.1:PORT/v1"
    wire_api = "responses"
    env_key = "FAKE_OPENAI_API_KEY"    # the variable holding the (dummy) key

It answers ``POST /v1/responses`` as a stream of server-sent events (``response.created``,
``response.output_item.added``, the item's deltas, ``response.output_item.done``,
``response.completed`` with usage) or as one JSON body when ``stream`` is false, plus
``GET /v1/models``; every request is recorded.

Scripting is :class:`tests.fakes.anthropic.FakeAnthropic`'s: :meth:`FakeResponses.script`
takes a *key* occurring in a user message of the request's ``input`` and the turns to give
for it, indexed by the model turns already in the input after the keyed message (a model
turn: consecutive assistant messages / tool calls, ended by a tool's output).  A turn is a
:class:`Reply` (built with :func:`text`, :func:`shell`, :func:`patch`, :func:`call`) or a
callable ``(Request) -> Reply``.  Unscripted requests get :attr:`FakeResponses.default_text`.

Item shapes are Codex 0.169.0's: its shell tool is the function ``exec_command`` with
arguments ``{"cmd": ...}`` (a hook sees it as tool_name ``Bash``), ``apply_patch`` a
*custom* (freeform) tool whose ``input`` is the patch text.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from aiohttp import web

from fakes.serving import ThreadedApp

_ids = itertools.count(1)

#: the shell tool of Codex 0.169.0 (unified exec)
SHELL_TOOL = "exec_command"
PATCH_TOOL = "apply_patch"
#: input items the model produced (what a model turn is made of)
_MODEL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call", "reasoning")
#: a model turn ends at a tool's output
_OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def _next_id(prefix: str) -> str:
    return f"{prefix}_e2e{next(_ids):05d}"


@dataclass(frozen=True)
class Item:
    """One output item: ``kind`` "message" (``text``), "function_call" (``name``,
    ``arguments`` as a JSON object) or "custom_tool_call" (``name``, freeform ``input``)."""

    kind: str
    text: str = ""
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    input: str = ""
    call_id: str = ""
    id: str = ""

    def done(self) -> dict[str, Any]:
        """The complete item, as ``response.output_item.done`` carries it."""
        if self.kind == "message":
            return {"type": "message", "id": self.id, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": self.text, "annotations": []}]}
        if self.kind == "function_call":
            return {"type": "function_call", "id": self.id, "call_id": self.call_id,
                    "name": self.name, "arguments": json.dumps(self.arguments),
                    "status": "completed"}
        return {"type": "custom_tool_call", "id": self.id, "call_id": self.call_id,
                "name": self.name, "input": self.input, "status": "completed"}

    def added(self) -> dict[str, Any]:
        """The item as first announced (``response.output_item.added``): no content yet."""
        item = self.done()
        item["status"] = "in_progress"
        if self.kind == "message":
            item["content"] = []
        elif self.kind == "function_call":
            item["arguments"] = ""
        else:
            item["input"] = ""
        return item


@dataclass(frozen=True)
class Reply:
    """A model turn: its output items and the usage Codex accounts."""

    items: tuple[Item, ...]
    input_tokens: int = 1200
    output_tokens: int = 40


def text(answer: str, **usage: int) -> Reply:
    """A turn that answers ``answer`` and ends the task."""
    return Reply((Item("message", text=answer),), **usage)


def call(name: str, arguments: dict[str, Any], say: str = "", **usage: int) -> Reply:
    """A turn calling the function tool ``name``, optionally saying ``say`` first."""
    items = (Item("message", text=say),) if say else ()
    return Reply(items + (Item("function_call", name=name, arguments=arguments),), **usage)


def shell(command: str, say: str = "", **usage: int) -> Reply:
    """A turn running ``command`` with Codex's shell tool (``exec_command``)."""
    return call(SHELL_TOOL, {"cmd": command}, say, **usage)


def patch(patch_text: str, say: str = "", **usage: int) -> Reply:
    """A turn applying ``patch_text`` (``*** Begin Patch`` … ``*** End Patch``) with
    Codex's freeform ``apply_patch`` tool."""
    items = (Item("message", text=say),) if say else ()
    return Reply(items + (Item("custom_tool_call", name=PATCH_TOOL, input=patch_text),), **usage)


def add_file_patch(path: str, content: str) -> str:
    """An apply_patch text creating ``path`` with ``content`` (lines)."""
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


class Request:
    """One recorded request with helpers for reading it."""

    def __init__(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
                 ) -> None:
        self.path = path
        self.body = body
        self.headers = headers or {}

    @property
    def input(self) -> list[dict[str, Any]]:
        items = self.body.get("input")
        if isinstance(items, str):
            return [{"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": items}]}]
        return [i for i in items or [] if isinstance(i, dict)]

    @property
    def streaming(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name") or t.get("type", "") for t in self.body.get("tools") or []]

    def prompt_index(self, key: str) -> int | None:
        """Index of the latest user message of ``input`` whose text contains ``key``."""
        for i in range(len(self.input) - 1, -1, -1):
            item = self.input[i]
            if item.get("role") == "user" and key in item_text(item):
                return i
        return None

    def turn_after(self, index: int) -> int:
        """How many model turns the input already has after item ``index``."""
        turns = 0
        in_turn = False
        for item in self.input[index + 1:]:
            if _is_model_item(item):
                if not in_turn:
                    turns += 1
                in_turn = True
            else:
                in_turn = False
        return turns

    def tool_outputs(self) -> list[dict[str, Any]]:
        """The tool outputs at the end of ``input`` (what the last tool call gave)."""
        out: list[dict[str, Any]] = []
        for item in reversed(self.input):
            if item.get("type") not in _OUTPUT_ITEMS:
                break
            out.insert(0, item)
        return out

    def text(self) -> str:
        """The whole request as text, for loose assertions."""
        return json.dumps(self.body, ensure_ascii=False)


def _is_model_item(item: dict[str, Any]) -> bool:
    if item.get("type") in _MODEL_ITEMS:
        return True
    return item.get("type", "message") == "message" and item.get("role") == "assistant"


def item_text(item: dict[str, Any]) -> str:
    """The text parts of one message item joined."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict))


Turn = Reply | Callable[[Request], Reply]


class FakeResponses(ThreadedApp):
    """The fake Responses API server; run it with :meth:`start` (its own thread and loop)."""

    what = "fake OpenAI Responses API"

    def __init__(self, default_text: str = "OK.", model: str = "gpt-5.5") -> None:
        self.default_text = default_text
        self.model = model
        self.requests: list[Request] = []
        self._scripts: list[tuple[str, list[Turn]]] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- scripting -------------------------------------------------------------------------

    def script(self, key: str, *turns: Turn) -> None:
        """Answer prompts containing ``key`` with ``turns``, one per model request.

        Later scripts win when several keys match; past the last turn the model answers
        :attr:`default_text`.
        """
        with self._lock:
            self._scripts.insert(0, (key, list(turns)))

    def reply_for(self, req: Request) -> Reply:
        """The turn the script gives for ``req`` (the default text if none matches)."""
        with self._lock:
            scripts = list(self._scripts)
        best: tuple[int, list[Turn]] | None = None
        for key, turns in scripts:
            idx = req.prompt_index(key)
            if idx is not None and (best is None or idx > best[0]):
                best = (idx, turns)
        if best is None:
            return text(self.default_text)
        idx, turns = best
        step = req.turn_after(idx)
        if step >= len(turns):
            return text(self.default_text)
        turn = turns[step]
        return _fresh_ids(turn(req) if callable(turn) else turn)

    def requests_with(self, key: str) -> list[Request]:
        """Recorded ``/responses`` requests with a user message containing ``key``."""
        with self._lock:
            reqs = list(self.requests)
        return [r for r in reqs if r.path.endswith("/responses") and r.prompt_index(key) is not None]

    # -- Codex's configuration --------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def provider_config(self, env_key: str = "FAKE_OPENAI_API_KEY") -> str:
        """The config.toml lines pointing Codex at this server (model and provider)."""
        return (
            f'model = "{self.model}"\n'
            'model_provider = "fake"\n\n'
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{self.base_url}"\n'
            'wire_api = "responses"\n'
            f'env_key = "{env_key}"\n'
        )

    # -- server ----------------------------------------------------------------------------

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_get("/v1/models", self._models)
        app.router.add_route("*", "/{tail:.*}", self._other)

    def _record(self, req: Request) -> None:
        with self._lock:
            self.requests.append(req)

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        req = Request(request.path, body, dict(request.headers))
        self._record(req)
        reply = self.reply_for(req)
        model = str(body.get("model") or self.model)
        if not req.streaming:
            return web.json_response(_response_json(reply, model, "completed"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        for event in sse_events(reply, model):
            await resp.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        await resp.write_eof()
        return resp

    async def _models(self, request: web.Request) -> web.Response:
        self._record(Request(request.path, {}, dict(request.headers)))
        return web.json_response({"object": "list", "data": [
            {"id": self.model, "object": "model", "created": 0, "owned_by": "e2e"}]})

    async def _other(self, request: web.Request) -> web.Response:
        await request.read()
        self._record(Request(request.path, {}, dict(request.headers)))
        return web.json_response({"error": {"message": "not found", "type": "invalid_request_error"}},
                                 status=404)


def _fresh_ids(reply: Reply) -> Reply:
    """A copy of ``reply`` with new item and call ids (a scripted turn may be served often)."""
    items = []
    for item in reply.items:
        prefix = {"message": "msg", "function_call": "fc", "custom_tool_call": "ctc"}[item.kind]
        call_id = _next_id("call") if item.kind != "message" else ""
        items.append(replace(item, id=_next_id(prefix), call_id=call_id))
    return replace(reply, items=tuple(items))


def _usage(reply: Reply) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def _response_json(reply: Reply, model: str, status: str, rid: str = "") -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": rid or _next_id("resp"), "object": "response", "created_at": 0, "model": model,
        "status": status, "output": [i.done() for i in reply.items] if done else [],
        "usage": _usage(reply) if done else None,
    }


def sse_events(reply: Reply, model: str) -> list[dict[str, Any]]:
    """The streaming events for ``reply``, in order (each carries its ``type``)."""
    rid = _next_id("resp")
    seq = itertools.count()
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response_json(reply, model, "in_progress", rid)},
    ]
    for index, item in enumerate(reply.items):
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": item.added()})
        if item.kind == "message":
            events.append({"type": "response.content_part.added", "output_index": index,
                           "item_id": item.id, "content_index": 0,
                           "part": {"type": "output_text", "text": "", "annotations": []}})
            events.append({"type": "response.output_text.delta", "output_index": index,
                           "item_id": item.id, "content_index": 0, "delta": item.text})
            events.append({"type": "response.output_text.done", "output_index": index,
                           "item_id": item.id, "content_index": 0, "text": item.text})
        elif item.kind == "function_call":
            arguments = json.dumps(item.arguments)
            events.append({"type": "response.function_call_arguments.delta",
                           "output_index": index, "item_id": item.id, "delta": arguments})
            events.append({"type": "response.function_call_arguments.done",
                           "output_index": index, "item_id": item.id, "arguments": arguments})
        else:
            events.append({"type": "response.custom_tool_call_input.delta",
                           "output_index": index, "item_id": item.id, "delta": item.input})
            events.append({"type": "response.custom_tool_call_input.done",
                           "output_index": index, "item_id": item.id, "input": item.input})
        events.append({"type": "response.output_item.done", "output_index": index,
                       "item": item.done()})
    events.append({"type": "response.completed",
                   "response": _response_json(reply, model, "completed", rid)})
    for event in events:
        event["sequence_number"] = next(seq)
    return events
