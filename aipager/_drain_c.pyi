"""Stub for the compiled drain loop built from _fasthook/drain_ext.pyx."""

MAX_DATAGRAM: int
BATCH: int

def run(fd: int, out: int, wake: int, max_backlog: int) -> int: ...
