"""A tiny MCP server over stdio that asks its client for a form (``elicitation/create``).

Run by the real Claude Code as an MCP server (``python -I mcp_elicit.py RESULT_FILE``): its
one tool ``ask`` sends the client an elicitation with ``SCHEMA`` and returns what came back;
every elicitation answer is also appended to RESULT_FILE as one JSON line, so a test reads
exactly what the server received.  Standard library only (JSON-RPC 2.0, one message a line,
as MCP's stdio transport says).
"""

from __future__ import annotations

import json
import sys

MESSAGE = "Where should the release go?"
SCHEMA = {
    "type": "object",
    "properties": {
        "channel": {"type": "string", "title": "Channel", "enum": ["stable", "beta", "nightly"],
                    "enumNames": ["Stable", "Beta", "Nightly"]},
        "note": {"type": "string", "title": "Release note", "description": "one line"},
        "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 9},
        "notify": {"type": "boolean", "title": "Tell the team", "default": True},
    },
    "required": ["channel", "replicas"],
}


def _send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def _read() -> dict | None:
    line = sys.stdin.readline()
    if not line:
        return None
    return json.loads(line)


def main() -> None:
    out_file = sys.argv[1]
    asked = 0
    while True:
        msg = _read()
        if msg is None:
            return
        method = msg.get("method")
        if method == "initialize":
            _send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "releaser", "version": "1.0.0"}}})
        elif method == "tools/list":
            _send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [{
                "name": "ask", "description": "Ask the user where the release goes.",
                "inputSchema": {"type": "object", "properties": {}}}]}})
        elif method == "tools/call":
            asked += 1
            _send({"jsonrpc": "2.0", "id": f"elicit-{asked}", "method": "elicitation/create",
                   "params": {"message": MESSAGE, "requestedSchema": SCHEMA}})
            answer = None
            while answer is None:
                got = _read()
                if got is None:
                    return
                if got.get("id") == f"elicit-{asked}":
                    answer = got
            with open(out_file, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(answer) + "\n")
            result = answer.get("result") or {}
            text = f"action={result.get('action')} content={json.dumps(result.get('content'))}"
            _send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "content": [{"type": "text", "text": text}]}})
        elif "id" in msg and method is not None:
            _send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})


if __name__ == "__main__":
    main()
