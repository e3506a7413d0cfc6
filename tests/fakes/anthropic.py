"""A scripted stand-in for the Anthropic Messages API, for driving the real Claude Code.

Claude Code reaches it through ``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT``.  It answers
``POST /v1/messages`` streaming (SSE) or not, as the request asks, plus ``count_tokens``,
and records every request so scenarios can assert on what the model was shown.

A scenario scripts the model with :meth:`FakeAnthropic.script`: a *key* (a string that occurs
in the user's prompt) and the list of assistant turns to give for that prompt.  The turn index
is the number of assistant messages already in the conversation after the keyed prompt, so
the script is stateless and replays the same way on every request — including the subagent
conversation an ``Agent`` tool_use starts (key it on the subagent's own prompt).  A turn is a
:class:`Reply` or a callable ``(Request) -> Reply`` for answers that depend on a tool_result.

Requests nobody scripted (titles, summaries, compaction, quota probes, prompts without a
key) get :attr:`FakeAnthropic.default_text`.
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

#: Claude Code appends environment info as a trailing message with this role
_SYSTEM_ROLE = "system"

_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}_e2e{next(_ids):05d}"


@dataclass
class Block:
    """One content block of an assistant turn: text or a tool_use."""

    type: str
    text: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    id: str = ""

    def as_json(self) -> dict[str, Any]:
        if self.type == "text":
            return {"type": "text", "text": self.text}
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": self.input}


@dataclass
class Reply:
    """An assistant turn: its blocks and the usage figures Claude Code accounts."""

    blocks: list[Block]
    input_tokens: int = 1200
    output_tokens: int = 40

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b.type == "tool_use" for b in self.blocks) else "end_turn"


def text(answer: str, **usage: int) -> Reply:
    """A turn that just answers ``answer`` and ends the task."""
    return Reply([Block("text", text=answer)], **usage)


def tool(name: str, tool_input: dict[str, Any], say: str = "", **usage: int) -> Reply:
    """A turn that calls one tool, optionally saying ``say`` first."""
    blocks = [Block("text", text=say)] if say else []
    blocks.append(Block("tool_use", name=name, input=tool_input))
    return Reply(blocks, **usage)


def bash(command: str, say: str = "", **usage: int) -> Reply:
    """A Bash tool call (``run_in_background`` is left to :func:`tool`)."""
    return tool("Bash", {"command": command, "description": "e2e step"}, say, **usage)


def agent(prompt: str, description: str = "e2e subagent", **usage: int) -> Reply:
    """Launch a subagent; its own requests are keyed on ``prompt``."""
    payload = {"description": description, "prompt": prompt, "subagent_type": "general-purpose"}
    return tool("Agent", payload, **usage)


class Request:
    """One recorded ``/v1/messages`` request with helpers for reading it."""

    def __init__(self, path: str, body: dict[str, Any]) -> None:
        self.path = path
        self.body = body

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages") or []

    @property
    def streaming(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name", "") for t in self.body.get("tools") or []]

    def _user_messages(self) -> list[tuple[int, dict[str, Any]]]:
        return [(i, m) for i, m in enumerate(self.messages) if m.get("role") == "user"]

    def last_user(self) -> dict[str, Any] | None:
        """The last ``role: user`` message (skipping Claude Code's trailing system one)."""
        users = self._user_messages()
        return users[-1][1] if users else None

    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks of the last user message (empty on a fresh prompt)."""
        msg = self.last_user() or {}
        return [b for b in _blocks(msg) if b.get("type") == "tool_result"]

    def prompt_index(self, key: str) -> int | None:
        """Index of the latest user message whose text contains ``key``."""
        for i, msg in reversed(self._user_messages()):
            if key in message_text(msg):
                return i
        return None

    def turn_after(self, index: int) -> int:
        """How many assistant turns the conversation already has after message ``index``."""
        return sum(1 for m in self.messages[index + 1:] if m.get("role") == "assistant")

    def text(self) -> str:
        """All text of the request (system prompt and messages), for loose assertions."""
        return json.dumps(self.body, ensure_ascii=False)


def _blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    content = msg.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def message_text(msg: dict[str, Any]) -> str:
    """The text blocks of one message joined (tool_result contents excluded)."""
    return "\n".join(b.get("text", "") for b in _blocks(msg) if b.get("type") == "text")


Turn = Reply | Callable[[Request], Reply]


class FakeAnthropic(ThreadedApp):
    """The fake API server; run it with :meth:`start` (its own thread and loop)."""

    what = "fake Anthropic API"

    def __init__(self, default_text: str = "OK.") -> None:
        self.default_text = default_text
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

        Later scripts win over earlier ones when several keys match.  Past the last turn the
        model answers :attr:`default_text`.
        """
        with self._lock:
            self._scripts.insert(0, (key, list(turns)))

    def script_background_job(self, key: str, command: str) -> None:
        """Prompts with ``key`` start ``command`` as a background Bash job; its
        ``<task-notification>`` gets a short answer."""
        self.script(
            key,
            tool("Bash", {"command": command, "description": "bg job", "run_in_background": True}),
            text("Started it in the background."),
        )
        self.script("<task-notification>", text("The background job finished."))

    def reply_for(self, req: Request) -> Reply:
        """The turn the script gives for ``req`` (the default text if none matches)."""
        with self._lock:
            scripts = list(self._scripts)
        best: tuple[int, str, list[Turn]] | None = None
        for key, turns in scripts:
            idx = req.prompt_index(key)
            # The most recent keyed prompt owns the conversation's tail.
            if idx is not None and (best is None or idx > best[0]):
                best = (idx, key, turns)
        if best is None:
            return text(self.default_text)
        idx, _key, turns = best
        step = req.turn_after(idx)
        if step >= len(turns):
            return text(self.default_text)
        turn = turns[step]
        reply = turn(req) if callable(turn) else turn
        return _fresh_ids(reply)

    # -- queries for assertions -------------------------------------------------------------

    def requests_with(self, key: str) -> list[Request]:
        """Recorded requests whose last user message contains ``key``."""
        with self._lock:
            reqs = list(self.requests)
        return [r for r in reqs if r.prompt_index(key) is not None]

    # -- server ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_route("*", "/{tail:.*}", self._other)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        req = Request(request.path, body)
        with self._lock:
            self.requests.append(req)
        reply = self.reply_for(req)
        model = body.get("model", "claude-e2e")
        if req.streaming:
            return await _stream(request, reply, model)
        return web.json_response(_message_json(reply, model))

    async def _count_tokens(self, request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"input_tokens": 1200})

    async def _other(self, request: web.Request) -> web.Response:
        await request.read()
        with self._lock:
            self.requests.append(Request(request.path, {}))
        return web.json_response({"type": "error", "error": {"type": "not_found_error"}}, status=404)


def _fresh_ids(reply: Reply) -> Reply:
    """A copy of ``reply`` whose tool calls get new ids.

    A scripted turn may be served many times (the same task typed twice); Claude Code and
    aipager both treat a tool_use id as unique within a session.
    """
    blocks = [
        replace(b, id=_next_id("toolu")) if b.type == "tool_use" else b for b in reply.blocks
    ]
    return replace(reply, blocks=blocks)


def _message_json(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": _next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [b.as_json() for b in reply.blocks],
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def sse_events(reply: Reply, model: str) -> list[tuple[str, dict[str, Any]]]:
    """The Messages API streaming events for ``reply``, in order."""
    start = _message_json(reply, model)
    start.update(content=[], stop_reason=None)
    start["usage"] = dict(_usage(reply), output_tokens=1)
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(reply.blocks):
        if block.type == "text":
            first = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block.text}
        else:
            first = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.input)}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": first}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                           "usage": {"output_tokens": reply.output_tokens}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


async def _stream(request: web.Request, reply: Reply, model: str) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                       "Cache-Control": "no-cache"})
    await resp.prepare(request)
    for name, data in sse_events(reply, model):
        await resp.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
    await resp.write_eof()
    return resp
