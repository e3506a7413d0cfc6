"""One-byte mutations for the differential fuzz tests (hypothesis ``st.data()`` draws)."""

from __future__ import annotations

from hypothesis import strategies as st

#: bytes that matter to a JSON scanner: structure, escapes, control, invalid UTF-8 leads, literals
BYTES = list(b'{}[]",:\\ \x00\x7f\x80\xc3\xed\xff0-eEnNu')


def mutate(raw: bytes, data) -> bytes:
    """raw with one byte deleted, replaced or inserted at a drawn position."""
    out = bytearray(raw)
    pos = data.draw(st.integers(min_value=0, max_value=len(out) - 1))
    action = data.draw(st.sampled_from(["delete", "replace", "insert"]))
    byte = data.draw(st.sampled_from(BYTES))
    if action == "delete":
        del out[pos]
    elif action == "replace":
        out[pos] = byte
    else:
        out.insert(pos, byte)
    return bytes(out)
