"""Benchmarks (``python -m bench``): kept apart from the tests, never timed in pytest."""
