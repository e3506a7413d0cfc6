"""Stage 2's fast start (issue 4): the install-time bundle, ``run``'s quick exit, ``--sock=FD``.

The bundle's completeness is proven by the whole case table in
``test_cases.py::test_bundle_alone_runs_every_case``; here: what happens when
the bundle is missing, foreign or broken, that no bundled module relies on
``assert`` (compiled with optimize=2), that the native binary starts exactly
``entry.BOOT``, and the socket the native hook passes on.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import socket
import subprocess

import pytest
from support import hookrun

from aipager.proto import paths
from aipager.hookpy import entry, hot, transport
from aipager.policy import notes

STOP = b'{"hook_event_name":"Stop","session_id":"s"}'


def _site_with(tmp_path: pathlib.Path, sources_site: str, bundle: bytes) -> str:
    return hookrun.copy_site(sources_site, str(tmp_path / "site"), **{hot.FILE: bundle})


@pytest.mark.parametrize("bundle", [b"", b"\x00\x01\x02\x03garbage", b"MAGC" + b"\x00" * 64],
                         ids=["empty", "garbage", "foreign-magic"])
def test_unusable_bundle_means_plain_imports(tmp_path, sources_only_site: str, bundle: bytes, receiver) -> None:
    site = _site_with(tmp_path, sources_only_site, bundle)
    done = hookrun.run(hookrun.listing_cmd("hook", site), STOP, hookrun.hook_env(), receiver)
    assert done.exit == 0, done.stderr
    assert [m["hook_event_name"] for m in done.sent] == ["Stop"]


def test_truncated_bundle_with_the_right_magic_means_plain_imports(tmp_path, sources_only_site: str,
                                                                   receiver) -> None:
    good = hot.build(sources_only_site)
    site = _site_with(tmp_path, sources_only_site, good[: len(good) // 2])
    done = hookrun.run(hookrun.twin_cmd("hook")[:5] + [site, "hook"], STOP, hookrun.hook_env(), receiver)
    assert (done.exit, [m["hook_event_name"] for m in done.sent]) == (0, ["Stop"]), done.stderr


def test_modules_come_from_the_bundle_when_it_is_there(bundle_only_site: str, receiver) -> None:
    done = hookrun.run(hookrun.listing_cmd("hook", bundle_only_site) + ["--capped"], STOP,
                       hookrun.hook_env(), receiver)
    assert done.exit == 0, done.stderr
    loaded = set(done.stderr.decode().split())
    assert {"aipager.hookpy.hook", "aipager.policy.hookside"} <= loaded
    assert {name for name in loaded if name.startswith("aipager")} <= set(hot.MODULES)


def test_module_files_point_into_the_site(bundle_only_site: str) -> None:
    code = (
        hookrun.boot_loader()
        + "import aipager.proto.paths, aipager.policy\n"
        + "print(aipager.proto.paths.__file__)\nprint(aipager.policy.__path__[0])\n"
    )
    done = subprocess.run([hookrun.twin_cmd("hook")[0], "-S", "-I", "-c", code, bundle_only_site],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == [f"{bundle_only_site}/aipager/proto/paths.py", f"{bundle_only_site}/aipager/policy"]


def test_bundled_modules_do_not_assert() -> None:
    """The bundle is compiled with optimize=2, which drops ``assert``: none may be relied on."""
    site = hookrun.twin_cmd("hook")[5]
    for name in hot.MODULES:
        if name == "__future__":
            continue
        path = pathlib.Path(site, hot.source_of(site, name)[0])
        tree = ast.parse(path.read_text(encoding="utf-8"))
        asserts = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
        assert not asserts, f"{path}: assert on lines {asserts}"


def test_native_binary_starts_entry_boot(native_bins: dict) -> None:
    """setup.py bakes entry.BOOT into the binary: one source for the bootstrap."""
    with open(native_bins["hook"], "rb") as fh:
        assert entry.BOOT.encode() in fh.read()


def test_passed_socket_parsing() -> None:
    assert transport.passed_socket(["--capped", "--sock=7"]) == 7
    assert transport.passed_socket(["--capped"]) == -1
    assert transport.passed_socket(["--sock=x"]) == -1
    assert transport.passed_socket(["--sock="]) == -1


def _connected_to(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)
    sock.connect(path)
    return sock


def test_twin_sends_through_the_passed_socket(tmp_path) -> None:
    """--sock=FD wins over the resolved path: the datagram arrives where FD points."""
    other = hookrun.Receiver(str(tmp_path / "elsewhere.sock"))
    env = hookrun.hook_env()  # resolves to a socket nobody binds
    sock = _connected_to(other.path)
    try:
        cmd = hookrun.twin_cmd("hook") + ["--capped", f"--sock={sock.fileno()}"]
        done = subprocess.run(cmd, input=STOP, env=env, capture_output=True, timeout=60,
                              pass_fds=(sock.fileno(),))
        assert done.returncode == 0, done.stderr
        got = [json.loads(d) for d in other.drain_raw()]
        assert got == [{"hook_event_name": "Stop", "session_id": "s", "session": "claude-jim"}]
    finally:
        sock.close()
        other.close()


def _twin_on_passed_socket(env: dict, sock: socket.socket) -> list[str]:
    """Run the twin hook with a Stop on ``sock`` passed as the native hook passes it (then
    closed); the spool's files after it, by path."""
    spool = paths.spool_dir(env)
    try:
        cmd = hookrun.twin_cmd("hook") + ["--capped", f"--sock={sock.fileno()}"]
        done = subprocess.run(cmd, input=STOP, env=env, capture_output=True, timeout=60,
                              pass_fds=(sock.fileno(),))
    finally:
        sock.close()
    assert done.returncode == 0, done.stderr
    return [os.path.join(spool, name) for name in os.listdir(spool) if name.endswith(".json")]


def test_passed_socket_whose_daemon_went_away_spools(tmp_path) -> None:
    env = hookrun.hook_env()
    os.makedirs(paths.spool_dir(env), mode=0o700, exist_ok=True)
    gone = hookrun.Receiver(str(tmp_path / "gone.sock"))
    sock = _connected_to(gone.path)
    gone.close()  # the daemon stopped after the native hook connected
    spooled = _twin_on_passed_socket(env, sock)
    assert len(spooled) == 1
    with open(spooled[0], "rb") as fh:
        assert json.loads(fh.read())["hook_event_name"] == "Stop"


def test_passed_socket_whose_drain_stopped_reading_spools(tmp_path) -> None:
    """A dead daemon's drain shuts its socket for reading while it salvages: a write on a
    socket connected before that fails (EPIPE), so the twin spools instead of losing it."""
    env = hookrun.hook_env()
    os.makedirs(paths.spool_dir(env), mode=0o700, exist_ok=True)
    salvaging = hookrun.Receiver(str(tmp_path / "salvaging.sock"))
    sock = _connected_to(salvaging.path)
    salvaging.sock.shutdown(socket.SHUT_RD)
    try:
        spooled = _twin_on_passed_socket(env, sock)
    finally:
        salvaging.close()
    assert len(spooled) == 1


def test_native_stage2_passes_a_connected_socket(native_bins: dict, receiver) -> None:
    """A prompt the compiled side declines (it starts with a no-break space,
    which Python's lstrip drops) is stage 2's to send: through the socket the
    native hook connected, and exactly once."""
    env = hookrun.hook_env(AIPAGER_DEBUG="1")
    # the owner's (a member's waiting message would have this prompt blocked: hookside)
    notes.write_note(env, "claude-jim", msg_id=1, chat_id=-1, author_user_id=5, author_label="ana",
                     role="owner", text="a chat message still waiting")
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": "/tmp", "prompt": "\u00a0typed"}
    done = hookrun.run([native_bins["hook"]], json.dumps(prompt).encode(), env, receiver)
    assert done.exit == 0, done.stderr
    assert b"declined to stage 2" in done.stderr
    assert b"sent through the passed socket" in done.stderr
    assert [m["hook_event_name"] for m in done.sent] == ["UserPromptSubmit"]


def _broken_site(tmp_path, sources_only_site: str) -> str:
    """A copy of aipager whose hook module cannot even be imported (a broken install)."""
    broken = {"aipager/hookpy/hook.py": b"raise ImportError('half an upgrade')\n"}
    return hookrun.copy_site(sources_only_site, str(tmp_path / "broken"), **broken)


@pytest.mark.parametrize(("flag", "code"), [("--fail-exit=2", 2), ("--fail-exit=0", 0), (None, 1)])
def test_a_twin_that_cannot_run_exits_with_the_code_it_was_given(tmp_path, sources_only_site: str,
                                                                 flag: str | None, code: int) -> None:
    """Stage 2 gets --fail-exit from the native side: 2 (a refusal) for a PreToolUse, so a
    broken install does not let a chat-driven tool call through."""
    cmd = hookrun.twin_cmd("hook")[:5] + [_broken_site(tmp_path, sources_only_site), "hook", "--capped"]
    pre = b'{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}'
    done = subprocess.run(cmd + ([flag] if flag else []), input=pre, env=hookrun.hook_env(),
                          capture_output=True, timeout=60)
    assert done.returncode == code
    assert b"aipager-hook: cannot run (ImportError); check the install with: aipager doctor" in done.stderr
    assert (b"aipager safety policy:" in done.stderr) == (code == 2)
    assert b"Traceback" not in done.stderr and done.stdout == b""


def test_native_stage2_passes_its_fail_exit(native_bins: dict) -> None:
    with open(native_bins["hook"], "rb") as fh:
        assert b"--fail-exit=%d" in fh.read()


def test_build_leaves_out_extensions_built_into_the_interpreter(monkeypatch, sources_only_site: str) -> None:
    """Debian's python3 has ``_socket`` built in (no ``__file__``): the install must not fail."""
    import marshal
    import sys

    assert "sys" in sys.builtin_module_names
    monkeypatch.setattr(hot, "EXTENSIONS", ("_json", "sys"))
    bundle = hot.build(sources_only_site)
    _loader, table = marshal.loads(bundle[4:])
    assert "sys" not in table and table["_json"][1] is None
