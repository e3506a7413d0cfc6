"""Install on a machine without a C compiler: the twins stand in, and work.

The rest of tests/hook runs against the native build CI installs.  This test
builds a wheel from the checkout the way pip does on a compiler-less machine
(``CC`` pointing nowhere, build isolation on), installs it into a fresh venv
and drives the installed ``aipager-hook`` and ``aipager-statusline`` with a
real event on a real datagram socket.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SKIP_COPY = {".git", ".venv", "build", "dist", ".pytest_cache", ".hypothesis"}


def _copy_tree(dst: Path) -> Path:
    """A copy of the checkout, so the build leaves no build/ in the real one."""
    if not (REPO / "setup.py").exists():
        pytest.fail(f"tests must run from a checkout; no setup.py in {REPO}")

    def ignore(folder: str, names: list[str]) -> set[str]:
        top = Path(folder) == REPO
        return {n for n in names if (top and n in SKIP_COPY) or n.endswith(".egg-info")}

    shutil.copytree(REPO, dst, ignore=ignore)
    return dst


@pytest.fixture(scope="module")
def twin_install(tmp_path_factory) -> Path:
    """bin/ of a venv holding aipager built with no usable compiler."""
    base = tmp_path_factory.mktemp("nocc")
    src = _copy_tree(base / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIPAGER_")}
    env["CC"] = str(base / "no-such-compiler")
    wheels = base / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(src)],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheels.glob("aipager-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--no-deps", "-q", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    return venv / "bin"


def test_wheel_carries_twin_scripts_not_elf(twin_install):
    for tool in ("aipager-hook", "aipager-statusline"):
        head = (twin_install / tool).read_bytes()[:64]
        assert not head.startswith(b"\x7fELF"), tool
        # pip rewrote '#!python' to the venv's own interpreter.
        assert head.startswith(f"#!{twin_install}/python".encode()), head


def _receiver(inst: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(inst / "aipager.sock"))
    sock.settimeout(20)
    return sock


def test_twin_hook_forwards_with_session(twin_install, tmp_path):
    inst = tmp_path / "inst"
    inst.mkdir()
    sock = _receiver(inst)
    event = {"hook_event_name": "Stop", "session_id": "abc", "last_assistant_message": "done"}
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
           "AIPAGER_INSTANCE_DIR": str(inst), "CLAUDE_DTACH_SESSION": "claude-nocc"}
    run = subprocess.run([str(twin_install / "aipager-hook")], input=json.dumps(event).encode(),
                         env=env, capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout == b""
    got = json.loads(sock.recv(1 << 20))
    sock.close()
    assert got["session"] == "claude-nocc"
    assert got["hook_event_name"] == "Stop"
    assert got["last_assistant_message"] == "done"


def test_twin_statusline_prints_and_writes_status(twin_install, tmp_path):
    inst = tmp_path / "inst"
    inst.mkdir()
    sock = _receiver(inst)
    status = {"session_id": "abc", "model": {"id": "claude-opus-5-5", "display_name": "Opus 5.5"},
              "cost": {"total_cost_usd": 1.234, "total_lines_added": 3, "total_lines_removed": 1},
              "context_window": {"used_percentage": 42, "total_input_tokens": 10,
                                 "total_output_tokens": 5, "current_usage": {"output_tokens": 2}}}
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
           "AIPAGER_INSTANCE_DIR": str(inst), "CLAUDE_DTACH_SESSION": "claude-nocc"}
    run = subprocess.run([str(twin_install / "aipager-statusline")],
                         input=json.dumps(status).encode(), env=env, capture_output=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.decode().strip() == "[nocc] Opus 5.5 | 42% ctx | $1.23"
    written = inst / "claude-status-claude-nocc.json"
    assert json.loads(written.read_text()) == status
    assert written.stat().st_mode & 0o777 == 0o600
    got = json.loads(sock.recv(1 << 20))
    sock.close()
    assert got["type"] == "statusline"
    assert got["context_pct"] == 42


def test_wheel_has_no_compiled_policy_extension(twin_install):
    """Without a compiler the optional matcher extension is skipped, not fatal."""
    site = next((twin_install.parent / "lib").glob("python*/site-packages"))
    assert not list((site / "aipager").glob("_policy_c*.so"))
    probe = subprocess.run(
        [str(twin_install / "python"), "-c",
         "from aipager.policy import match; print(match.ENGINE)"],
        capture_output=True, text=True, timeout=60,
        cwd=twin_install,  # not the checkout: `-c` imports from the working folder first
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "python"


def test_wheel_zip_lists_both_scripts(tmp_path, twin_install):
    # The wheel is what a package index would serve: both names must be there.
    (wheel,) = (twin_install.parent.parent / "wheels").glob("aipager-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".data/scripts/aipager-hook") for n in names)
    assert any(n.endswith(".data/scripts/aipager-statusline") for n in names)


def test_wheel_ships_the_catalogs_compiled_at_build_time(twin_install):
    # No .mo is committed: the build compiles every .po with Babel into the wheel.
    import gettext
    import io

    (wheel,) = (twin_install.parent.parent / "wheels").glob("aipager-*.whl")
    archive = zipfile.ZipFile(wheel)
    for locale, said in (("pt_BR", "Salvo."), ("es", "Guardado."), ("vi", "Đã lưu.")):
        data = archive.read(f"aipager/locales/{locale}/LC_MESSAGES/aipager.mo")
        assert gettext.GNUTranslations(io.BytesIO(data)).gettext("Saved.") == said
    assert not list(REPO.glob("aipager/locales/*/LC_MESSAGES/*.mo"))
