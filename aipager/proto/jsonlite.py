"""JSON through CPython's ``_json`` accelerator, without importing ``json``.

``import json`` pulls in ``re`` (~6 ms); the hook twins only need strict
parsing and compact encoding, which ``_json`` provides directly.  Semantics
match ``_fasthook/json.pxi`` where the C side does not decline: strict mode
(no raw control characters in strings), NaN/Infinity accepted here (the C side
declines on them, so this twin decides).
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # typing itself stays unimported: the hook twins load this module
if TYPE_CHECKING:
    from collections.abc import Callable

_WS = " \t\n\r"
_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class _Context:
    """The attribute bag ``_json.make_scanner`` reads its options from."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float: Callable[[str], object] = float
    parse_int: Callable[[str], object] = int
    parse_constant: Callable[[str], object] = _CONSTANTS.__getitem__
    memo: dict = {}


def _unencodable(obj: object) -> object:
    msg = f"Object of type {type(obj).__name__} is not JSON serializable"
    raise TypeError(msg)


# typeshed declares the context as a make_scanner; _json reads only the attributes above
_scan = _json.make_scanner(_Context())  # type: ignore[arg-type]
_encode = _json.make_encoder(
    None, _unencodable, _json.encode_basestring_ascii, None, ":", ",", False, False, True
)


def loads(text: str) -> object:
    """Parse one JSON document (surrounding whitespace allowed).

    Raises:
        ValueError: the text is not exactly one JSON value.
        RecursionError: nesting deeper than the interpreter allows.
    """
    start = len(text) - len(text.lstrip(_WS))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        msg = f"no JSON value at {exc.value}"
        raise ValueError(msg) from None
    except SystemError:
        # _json raises json.decoder.JSONDecodeError only when json.decoder is
        # already in sys.modules; without it a syntax error surfaces as
        # "returned NULL without setting an exception".
        msg = "malformed JSON"
        raise ValueError(msg) from None
    if text[end:].strip(_WS):
        msg = f"extra data at {end}"
        raise ValueError(msg)
    return value


def dumps(obj: object) -> str:
    """Compact, ASCII-only JSON (non-ASCII as \\uXXXX escapes).

    Raises:
        TypeError: a value JSON has no form for (json.dumps's message).
    """
    return "".join(_encode(obj, 0))
