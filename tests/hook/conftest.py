"""Fixtures for the hook executables: the installed binaries and a receiver."""

from __future__ import annotations

import os

import pytest
from support import hookrun

# Read at import, before tests/conftest.py's autouse fixture clears AIPAGER_*:
# a run with AIPAGER_NO_EXTENSIONS=1 installed the twins only, on purpose.
NO_NATIVE = os.environ.get("AIPAGER_NO_EXTENSIONS", "") not in ("", "0")
KINDS = ["twin"] if NO_NATIVE else ["native", "twin"]


@pytest.fixture(params=KINDS)
def kind(request) -> str:
    """Each test runs against the native binary and the Python twin."""
    return request.param


@pytest.fixture
def native_bins() -> dict:
    """Paths of the installed aipager-hook / aipager-statusline (must exist)."""
    if NO_NATIVE:
        pytest.skip("AIPAGER_NO_EXTENSIONS=1: the twins are installed instead")
    found = {tool: hookrun.native_path(tool) for tool in hookrun.TOOLS}
    missing = [tool for tool, path in found.items() if path is None]
    assert not missing, f"not installed: {missing} (pip install . first)"
    return found


@pytest.fixture(scope="session")
def bundle_only_site(tmp_path_factory) -> str:
    """A site dir holding nothing but the hot-path bundle, built from the aipager under test.

    The twin started on it can import only what the bundle carries: a module
    missing from ``aipager.hookpy.hot.MODULES`` fails the run instead of
    quietly loading from disk.
    """
    from aipager.hookpy import hot

    site = tmp_path_factory.mktemp("bundle-only")
    target = site / hot.FILE
    target.parent.mkdir(parents=True)
    target.write_bytes(hot.build(hookrun.twin_cmd("hook")[5]))
    return str(site)


@pytest.fixture(scope="session")
def sources_only_site(tmp_path_factory) -> str:
    """A site dir holding a copy of the aipager under test without the bundle: plain imports."""
    site = tmp_path_factory.mktemp("sources-only")
    return hookrun.copy_site(hookrun.twin_cmd("hook")[5], str(site))


@pytest.fixture
def receiver():
    """The daemon's socket in this test's AIPAGER_INSTANCE_DIR."""
    recv = hookrun.receiver_for(hookrun.hook_env())
    yield recv
    recv.close()
