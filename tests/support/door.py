"""The one door ``main`` hands every surface, built over a test's daemon or fake port the
way ``main`` builds it (``main.one_service``)."""

from __future__ import annotations

from typing import Any

from aipager.daemon.service import Service
from aipager.main import one_service


def door(port: Any) -> Service:
    return one_service(port.env, port)
