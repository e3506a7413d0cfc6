"""Fit an oversized event into one datagram (wire.MAX_DATAGRAM).

The largest strings under the wire.SHRINKABLE fields are cut first, each
ending in wire.TRUNCATION_MARKER; only if that is not enough are other
fields' strings cut.  The event name, ids, ``session`` and ``tool_name``
always survive; as a last resort only they are sent.
"""

from __future__ import annotations

from aipager.proto import wire
from aipager.proto import jsonlite

#: top-level keys never shortened
_PROTECTED = ("hook_event_name", "session", "tool_name", "notification_type", "type")
# headroom for the marker text and escaping so one cut usually suffices
_SLACK = 256


def _protected(key: str) -> bool:
    return key in _PROTECTED or key == "id" or key.endswith("_id")


def _leaves(node, out: list) -> None:
    """(container, key, length) of every string under node."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        if isinstance(value, str):
            out.append((node, key, len(value)))
        elif isinstance(value, (dict, list)):
            _leaves(value, out)


def _candidates(event: dict, keys) -> list:
    found: list = []
    for key in keys:
        value = event.get(key)
        if isinstance(value, str):
            found.append((event, key, len(value)))
        elif isinstance(value, (dict, list)):
            _leaves(value, found)
    return [leaf for leaf in found if leaf[2] > 0]


def _cut(container, key, excess: int) -> bool:
    """Shorten container[key] by about excess encoded bytes; False once it is all marker."""
    text = container[key]
    encoded = len(jsonlite.dumps(text)) - 2
    per_char = max(encoded / len(text), 1.0)
    drop = int((excess + _SLACK) / per_char) + 1
    keep = max(len(text) - drop, 0)
    dropped = text[keep:].encode("utf-8", "surrogatepass")
    container[key] = text[:keep] + wire.TRUNCATION_MARKER.format(n=len(dropped))
    return keep > 0


def shrink(event: dict) -> bytes:
    """Encode event (already holding session/sl_tokens) within MAX_DATAGRAM."""
    event = _copy(event)
    done: set = set()
    for _ in range(256):
        data = jsonlite.dumps(event).encode()
        excess = len(data) - wire.MAX_DATAGRAM
        if excess <= 0:
            return data
        leaves = _open(_candidates(event, wire.SHRINKABLE), done)
        if not leaves:
            others = [k for k in event if k not in wire.SHRINKABLE and not _protected(k)]
            leaves = _open(_candidates(event, others), done)
        if not leaves:
            break
        container, key, _length = max(leaves, key=lambda leaf: leaf[2])
        if not _cut(container, key, excess):
            done.add((id(container), key))
    minimal = {k: v for k, v in event.items() if _protected(k) and isinstance(v, (str, int, float))}
    minimal["aipager_truncated"] = True
    return jsonlite.dumps(minimal).encode()


def _open(leaves: list, done: set) -> list:
    """Leaves that can still be shortened."""
    return [leaf for leaf in leaves if (id(leaf[0]), leaf[1]) not in done]


def _copy(node):
    """Deep copy of plain JSON data (``copy`` is not a builtin module)."""
    if isinstance(node, dict):
        return {k: _copy(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_copy(v) for v in node]
    return node
