"""Two machines on the real path: `aipager start --hub` (its embedded nats-server from the
wheel, its bot on the fake Bot API) and `aipager start --join` for a host running the real
Claude Code TUI in dtach; the owner's message in the chat runs on the host and its answer
comes back once, threaded."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from e2e.kit import claude as kit
from e2e.kit.chat import Phone
from e2e.kit.daemon import Daemon, write_config
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

TUI_ARGS = ("--permission-mode", "default", "--allowedTools", "Bash,Write,Edit,Read")


def _wait_log(daemon, *needles: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not any(all(n in line for n in needles) for line in daemon.log().splitlines()):
        if time.monotonic() > deadline:
            raise AssertionError(f"never logged {needles}:\n{daemon.tail()}")
        time.sleep(0.2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def hub_home():
    home = kit.make_home("claude-hubside")
    yield home
    import shutil

    shutil.rmtree(home.root, ignore_errors=True)


def _own_address() -> str:
    """This machine's first IPv4 address beyond loopback (``hostname -I``)."""
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=True).stdout
    found = [a for a in out.split() if ":" not in a and not a.startswith("127.")]
    assert found, f"no IPv4 address beyond loopback here ({out!r})"
    return found[0]


@pytest.mark.parametrize("network", ["loopback", "tls"])
def test_a_message_on_the_hub_runs_on_the_host_and_its_answer_comes_back_once(
        network, claude_home, hub_home, fake_telegram, fake_anthropic, dtach_session):
    """``tls``: the hub listens on every address and hosts dial the machine's own address,
    so its server requires TLS (its own CA, in the credential) and the host signs in with
    its NKey over it; the hub's own client verifies the same certificate on loopback."""
    from aipager import config

    port = _free_port()
    write_config(hub_home)
    env = hub_home.aipager_env()
    cfg = config.load(env)
    where = {"listen": f"127.0.0.1:{port}"} if network == "loopback" else {
        "listen": f"0.0.0.0:{port}", "advertise": f"{_own_address()}:{port}"}
    url = f"nats://{where.get('advertise', where['listen'])}"
    config.save(env, config.Config(cfg.bot_token, cfg.chat_id, cfg.members, extra={
        **cfg.extra, "hub": {"name": "laptop", **where}}))
    creds = os.path.join(hub_home.root, "box.json")
    invite = subprocess.run([kit.installed_program("aipager"), "hub", "invite", "box", "--out",
                             creds], env=env, capture_output=True, text=True, timeout=30)
    assert invite.returncode == 0, invite.stderr
    command = next(line.strip() for line in invite.stdout.splitlines()
                   if "aipager start --join" in line)
    assert command == f"aipager start --join {url} --creds box.json"
    with open(creds) as fh:
        assert ("ca" in json.load(fh)) is (network == "tls")

    hub = Daemon(hub_home, api_base=fake_telegram.base, args=["--hub"])
    hub.start()
    host = Daemon(claude_home, args=["--join", url, "--creds", creds])
    try:
        host.start()
        fake_anthropic.script("E2E-HUB", fa.bash("echo from-the-host"),
                              fa.text("Answered on the host."))
        dtach_session(*TUI_ARGS)
        host.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 40,
                          "the session ready on the host")
        _wait_log(hub, "host box", "claude-e2e")
        assert not host.status()["state"]["daemon"].get("chat")  # no bot on the host

        phone = Phone(fake_telegram)
        msg = phone.say("E2E-HUB run the step")
        # the answer's own message (the working card may quote Claude's words as it writes them)
        (answer,) = phone.wait(lambda snap: [p for p in phone.replies_to(msg["message_id"], snap)
                                             if "Answered on the host." in p["text"]
                                             and p["text"].startswith("e2e\n")],
                               60, "the answer from the host")
        assert answer["text"] == "e2e\nAnswered on the host."
        (first, *_rest) = fake_anthropic.requests_with("E2E-HUB")
        assert "E2E-HUB run the step" in fa.message_text(first.last_user())
        sess = host.wait_session(lambda s: s["task"] and s["task"].get("ended_at"), 20,
                                 "the task done on the host")
        assert sess["task"]["origin"] == "telegram"
        assert [a.get("msg_id") for a in sess["task"]["authors"]] == [msg["message_id"]]
        time.sleep(2.0)  # anything repeated would arrive by now
        answers = [p for p in phone.calls("sendMessage") if "Answered on the host." in p["text"]
                   and p["text"].startswith("e2e\n")]
        assert len(answers) == 1
        hub_state = hub.status()["state"]
        assert not [s for s in hub_state["sessions"] if s["name"].startswith("claude-e2e")]
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- hub\n{hub.tail()}\n--- host\n{host.tail()}") from None
    finally:
        host.stop()
        hub.stop()
    # the hub's embedded server stopped with it
    with contextlib.suppress(FileNotFoundError):
        pid = int(open(os.path.join(env["XDG_STATE_HOME"], "aipager", "hub",
                                    "nats-server.pid")).read())
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
            raise AssertionError("the embedded nats-server outlived the hub")


def test_a_host_joined_with_the_readmes_commands_is_wired_and_reaches_the_chat(
        hub_home, hook_programs, fake_telegram, fake_anthropic):
    """Issue 34: a new machine that never ran `aipager setup` (no bot there) joins with the
    README's two commands (`aipager hub invite`, `aipager start --join … --creds …`), and its
    session is started with `aipager session NAME --detached`: Claude Code's settings.json
    gets aipager's hooks at the join, so the session's events reach the hub's chat (without
    them the host's daemon never heard of the session and the chat's message found none)."""
    from aipager import config
    from e2e.kit.dtachs import CliSession

    port = _free_port()
    write_config(hub_home)
    env = hub_home.aipager_env()
    cfg = config.load(env)
    config.save(env, config.Config(cfg.bot_token, cfg.chat_id, cfg.members, extra={
        **cfg.extra, "hub": {"name": "laptop", "listen": f"127.0.0.1:{port}"}}))
    creds = os.path.join(hub_home.root, "box.json")
    invite = subprocess.run([kit.installed_program("aipager"), "hub", "invite", "box", "--out",
                             creds], env=env, capture_output=True, text=True, timeout=30)
    assert invite.returncode == 0, invite.stderr
    box = kit.make_home()  # a fresh machine: Claude Code installed, nothing of aipager wired
    assert not os.path.exists(box.settings_path)
    hub = Daemon(hub_home, api_base=fake_telegram.base, args=["--hub"])
    hub.start()
    host = Daemon(box, args=["--join", f"nats://127.0.0.1:{port}", "--creds", creds])
    session = CliSession(box, fake_anthropic.base_url, list(TUI_ARGS))
    try:
        host.start()
        assert box.read_settings() == kit.expected_settings(*hook_programs)
        with open(host.output) as fh:
            assert f"Wired Claude Code: {box.settings_path}" in fh.read()
        fake_anthropic.script("E2E-JOIN", fa.bash("echo joined"), fa.text("Done on box."))
        session.start()
        host.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 40,
                          "the session known to the host's daemon (its SessionStart hook)")
        _wait_log(hub, "host box", "claude-e2e")
        # doctor knows the machine is a host: no bot to set up, the link connected
        doctor = subprocess.run([kit.installed_program("aipager"), "doctor", "--json"],
                                env=box.aipager_env(), capture_output=True, text=True, timeout=60)
        checks = {c["name"]: c for c in json.loads(doctor.stdout)}
        assert not {"config", "token", "chat"} & set(checks), doctor.stdout
        for name in ("hub creds", "hub address", "hub link", "settings.json", "daemon"):
            assert checks[name]["ok"], checks[name]
        assert checks["hub link"]["detail"].startswith(f"connected to nats://127.0.0.1:{port}")
        phone = Phone(fake_telegram)
        msg = phone.say("E2E-JOIN run it")
        phone.wait(lambda snap: [p for p in phone.replies_to(msg["message_id"], snap)
                                 if "Done on box." in p["text"]], 60, "the answer from box")
        sess = host.wait_session(lambda s: s["task"] and s["task"].get("ended_at"), 20,
                                 "the task done on the host")
        # the Bash command went through the host's own hook (PreToolUse reached its daemon)
        assert "echo joined" in json.dumps(sess)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- hub\n{hub.tail()}\n--- host\n{host.tail()}") from None
    finally:
        session.stop()
        host.stop()
        hub.stop()
        import shutil

        shutil.rmtree(box.root, ignore_errors=True)
