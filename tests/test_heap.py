"""``aipager.heap``: the heap's free pages go back to the system."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
from aipager import heap

def rss():
    return [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmRSS")][0]

# 40 MB in malloc'd chunks (past pymalloc's small objects), the last one kept: glibc cannot
# shrink the heap from its top and keeps the freed pages
blocks = [bytes(2000) + bytes([i % 256]) for i in range(20_000)]
keep = blocks[-1]
del blocks
before = rss()
heap.trim()
print(before, rss())
"""


def test_trim_hands_freed_heap_pages_back():
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          timeout=60, check=True)
    before, after = map(int, done.stdout.split())
    assert before - after > 20_000, (before, after)  # kB: most of the 40 MB freed
