"""A scripted stand-in for the OpenAI chat-completions API, for driving the real AX Code.

AX Code speaks OpenAI-compatible APIs only (``@ai-sdk/openai-compatible`` with a ``baseURL``),
so it reaches this server through a provider whose ``options.baseURL`` is
``http://127.0.0.1:PORT/v1``.  It answers ``POST /v1/chat/completions`` streaming (SSE chunks,
tool calls as ``delta.tool_calls``) or not, as the request asks, plus ``GET /v1/models``, and
records every request so a scenario can read what the model was shown (a tool's result, a
hook's refusal).

Scripting is :class:`tests.fakes.anthropic.FakeAnthropic`'s: a *key* occurring in a user
message and the turns to give for it, indexed by the assistant messages already in the
conversation after the keyed one.  A turn is a :class:`Reply` (text and/or tool calls) or a
callable ``(Request) -> Reply``.  Requests nobody scripted (titles, summaries) get
:attr:`FakeOpenAI.default_text`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from aiohttp import web

_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}_e2e{next(_ids):05d}"


@dataclass(frozen=True)
class Call:
    """One tool call of an assistant turn (``name`` as the client declared the tool)."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """An assistant turn: optional text, then tool calls."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    prompt_tokens: int = 1200
    completion_tokens: int = 40

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.calls else "stop"


def text(answer: str) -> Reply:
    """A turn that answers ``answer`` and ends the task."""
    return Reply(text=answer)


def tool(name: str, arguments: dict[str, Any], say: str = "") -> Reply:
    """A turn that calls one tool, optionally saying ``say`` first."""
    return Reply(text=say, calls=(Call(name, arguments),))


def bash(command: str, say: str = "") -> Reply:
    """AX Code's ``bash`` tool."""
    return tool("bash", {"command": command, "description": "e2e step"}, say)


def _content(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class Request:
    """One recorded chat-completions request with helpers for reading it."""

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
        return [(t.get("function") or {}).get("name", "") for t in self.body.get("tools") or []]

    def prompt_index(self, key: str) -> int | None:
        """Index of the latest user message whose text contains ``key``."""
        for i in range(len(self.messages) - 1, -1, -1):
            msg = self.messages[i]
            if msg.get("role") == "user" and key in _content(msg):
                return i
        return None

    def turn_after(self, index: int) -> int:
        """How many assistant turns the conversation already has after message ``index``."""
        return sum(1 for m in self.messages[index + 1:] if m.get("role") == "assistant")

    def tool_results(self) -> list[str]:
        """The ``role: tool`` messages' texts after the last assistant turn."""
        out: list[str] = []
        for msg in reversed(self.messages):
            if msg.get("role") != "tool":
                break
            out.append(_content(msg))
        return out[::-1]


Turn = Reply | Callable[[Request], Reply]


class FakeOpenAI:
    """The fake API server; run it with :meth:`start` (its own thread and loop)."""

    def __init__(self, default_text: str = "OK.") -> None:
        self.default_text = default_text
        self.requests: list[Request] = []
        self._scripts: list[tuple[str, list[Turn]]] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def script(self, key: str, *turns: Turn) -> None:
        """Answer conversations whose latest keyed user message holds ``key`` with ``turns``."""
        with self._lock:
            self._scripts.insert(0, (key, list(turns)))

    def reply_for(self, req: Request) -> Reply:
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
        return turn(req) if callable(turn) else turn

    def requests_with(self, key: str) -> list[Request]:
        with self._lock:
            reqs = list(self.requests)
        return [r for r in reqs if r.prompt_index(key) is not None]

    # -- server ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """What a client's ``baseURL`` names (the ``/v1`` prefix included)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            msg = "fake OpenAI API did not start within 10 s"
            raise RuntimeError(msg)

    def stop(self) -> None:
        loop, runner = self._loop, self._runner
        if loop is None or runner is None:
            return
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _serve(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_route("*", "/{tail:.*}", self._other)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        self._runner = runner
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        loop.run_forever()
        loop.close()

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        req = Request(request.path, body)
        with self._lock:
            self.requests.append(req)
        reply = self.reply_for(req)
        model = body.get("model", "fake-e2e")
        if req.streaming:
            return await _stream(request, reply, model)
        return web.json_response(_completion_json(reply, model))

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake-e2e", "object": "model"}]})

    async def _other(self, request: web.Request) -> web.Response:
        await request.read()
        with self._lock:
            self.requests.append(Request(request.path, {}))
        return web.json_response({"error": {"message": "not found", "type": "invalid_request_error"}},
                                 status=404)


def _usage(reply: Reply) -> dict[str, int]:
    return {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens}


def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [{"index": i, "id": _next_id("call"), "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for i, c in enumerate(reply.calls)]


def _completion_json(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in _tool_calls(reply)]
    return {"id": _next_id("chatcmpl"), "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message,
                                         "finish_reason": reply.finish_reason}],
            "usage": _usage(reply)}


def sse_chunks(reply: Reply, model: str) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects streamed for ``reply``, in order."""
    cid = _next_id("chatcmpl")
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

    out = [chunk({"role": "assistant", "content": ""})]
    if reply.text:
        out.append(chunk({"content": reply.text}))
    for call in _tool_calls(reply):
        out.append(chunk({"tool_calls": [call]}))
    out.append(chunk({}, reply.finish_reason))
    out.append({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [], "usage": _usage(reply)})
    return out


async def _stream(request: web.Request, reply: Reply, model: str) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                       "Cache-Control": "no-cache"})
    await resp.prepare(request)
    for data in sse_chunks(reply, model):
        await resp.write(f"data: {json.dumps(data)}\n\n".encode())
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp
