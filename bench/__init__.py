"""Benchmarks (``python -m bench``): kept apart from the tests, never timed in pytest.

They measure the aipager that ``pip install .`` built, not the source tree they
are started from: ``python -m bench`` puts the current folder first on
``sys.path``, where ``aipager/`` has no compiled drain, no policy extension and
no hot-path bundle.  So when an installed aipager is on the path, the source
folders move behind it here, before any benchmark imports aipager (this runs
for ``python -m bench`` and for the daemon ``bench.ingest`` starts alike).
"""

from __future__ import annotations

import os
import sys


def _prefer_installed_aipager() -> None:
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    here = {"", ".", source, os.getcwd()}
    local = [p for p in sys.path if p in here or os.path.abspath(p or ".") == source]
    others = [p for p in sys.path if p not in local]
    if any(os.path.exists(os.path.join(p, "aipager", "__init__.py")) for p in others):
        sys.path[:] = others + local


_prefer_installed_aipager()
