"""Writes the page's app icons (``aipager/web/static/icons``): a pager drawn in pixels, as
PNG (what phones put on a home screen) and SVG.  Standard library only; run it again after
changing the drawing and commit what it writes."""

from __future__ import annotations

import os
import struct
import zlib

HERE = os.path.join(os.path.dirname(__file__), "..", "aipager", "web", "static", "icons")
BLUE, WHITE, SCREEN = (0x25, 0x63, 0xEB), (0xFF, 0xFF, 0xFF), (0x9E, 0xE6, 0xB8)

# the drawing on a 16-unit grid: the body (rounded), its screen, three buttons
SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">
<rect width="16" height="16" rx="3.5" fill="#2563eb"/>
<rect x="3" y="4" width="10" height="8.5" rx="1.2" fill="#ffffff"/>
<rect x="4.2" y="5.2" width="7.6" height="3.3" rx=".4" fill="#9ee6b8"/>
<circle cx="5.6" cy="10.5" r=".75" fill="#2563eb"/><circle cx="8" cy="10.5" r=".75" fill="#2563eb"/>
<circle cx="10.4" cy="10.5" r=".75" fill="#2563eb"/>
</svg>
"""


def _inside_rounded(x: float, y: float, x0: float, y0: float, w: float, h: float, r: float) -> bool:
    if not (x0 <= x <= x0 + w and y0 <= y <= y0 + h):
        return False
    cx = min(max(x, x0 + r), x0 + w - r)
    cy = min(max(y, y0 + r), y0 + h - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def pixel(u: float, v: float) -> tuple[int, int, int, int]:
    """The colour at (u, v) in grid units (0..16)."""
    if not _inside_rounded(u, v, 0, 0, 16, 16, 3.5):
        return (0, 0, 0, 0)
    for cx in (5.6, 8.0, 10.4):
        if (u - cx) ** 2 + (v - 10.5) ** 2 <= 0.75 ** 2:
            return (*BLUE, 255)
    if _inside_rounded(u, v, 4.2, 5.2, 7.6, 3.3, 0.4):
        return (*SCREEN, 255)
    if _inside_rounded(u, v, 3, 4, 10, 8.5, 1.2):
        return (*WHITE, 255)
    return (*BLUE, 255)


def png(size: int) -> bytes:
    rows = bytearray()
    scale = 16 / size
    for y in range(size):
        rows.append(0)  # filter: none
        for x in range(size):
            rows.extend(pixel((x + 0.5) * scale, (y + 0.5) * scale))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b""))


def main() -> None:
    os.makedirs(HERE, exist_ok=True)
    for size in (192, 512):
        with open(os.path.join(HERE, f"icon-{size}.png"), "wb") as fh:
            fh.write(png(size))
    with open(os.path.join(HERE, "icon.svg"), "w", encoding="utf-8") as fh:
        fh.write(SVG)


if __name__ == "__main__":
    main()
