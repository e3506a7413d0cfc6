"""`aipager hub invite|hosts|revoke` and `start --join`, with the embedded server: an
invited host may connect at once, a revoked one no more."""

from __future__ import annotations

import json
import os
import stat

import nats
import pytest
from fakes.telegram_api import OWNER, TOKEN
from hub.conftest import free_port
from typer.testing import CliRunner

from aipager import config
from aipager.proto import paths
from aipager.cli.app import app
from aipager.hub import creds, layout, server, settings


@pytest.fixture
def hub_config(tmp_path):
    port = free_port()
    env = dict(os.environ)
    cfg = config.Config(bot_token=TOKEN, chat_id=OWNER["id"],
                        extra={"hub": {"name": "laptop", "listen": f"127.0.0.1:{port}"}})
    config.save(env, cfg)
    return env, port


def test_invite_writes_a_private_credential_and_prints_the_one_command(hub_config, tmp_path):
    env, port = hub_config
    out = tmp_path / "box.json"
    result = CliRunner().invoke(app, ["hub", "invite", "box", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"aipager start --join nats://127.0.0.1:{port} --creds box.json" in result.output
    assert "loopback" in result.output
    doc = json.loads(out.read_text())
    assert doc["user"] == "box" and doc["seed"].startswith("SU") and "password" not in doc
    assert "ca" not in doc  # a hub on loopback: no TLS
    assert doc["url"] == f"nats://127.0.0.1:{port}"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    conf = open(layout.server_config(env)).read()
    public = creds.host_nkeys(env)["box"]
    assert f'nkey: "{public}"' in conf and '"aipager.box.out"' in conf
    assert doc["seed"] not in conf and doc["seed"] not in open(layout.hosts_file(env)).read()
    # --password: a user and password instead
    result = CliRunner().invoke(app, ["hub", "invite", "vm", "--password", "--out",
                                      str(tmp_path / "vm.json")])
    vm = json.loads((tmp_path / "vm.json").read_text())
    assert len(vm["password"]) >= 24 and "seed" not in vm
    assert vm["password"] in open(layout.server_config(env)).read()
    assert stat.S_IMODE(os.stat(layout.server_config(env)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(layout.hosts_file(env)).st_mode) == 0o600

    listed = CliRunner().invoke(app, ["hub", "hosts"])
    assert listed.output.splitlines() == ["box  hub not running", "vm  hub not running"]


@pytest.mark.parametrize("bad", ["Box", "hub", "a.b", "-x", "x" * 33, "a>b"])
def test_a_name_that_cannot_be_a_host_is_refused(hub_config, bad):
    result = CliRunner().invoke(app, ["hub", "invite", "--", bad])
    assert result.exit_code == 3 and "cannot name a host" in result.output


async def test_the_embedded_server_lets_in_whom_the_hub_invited_and_no_one_else(hub_config):
    env, port = hub_config
    hub = settings.from_config(config.load(env).extra)
    box = creds.invite(env, "box", hub.invite_url())
    embedded = server.EmbeddedServer(env, hub)
    embedded.start()
    try:
        # (the server may still be settling in on a busy machine: a reset connection)
        nc = await _eventually_connect(hub.client_url(), box)
        await nc.close()
        # invited while it runs: the invite command reloads it
        result = CliRunner().invoke(app, ["hub", "invite", "vm", "--out", str(
            layout.invites_dir(env) + "/vm.json")])
        assert result.exit_code == 0 and "may join now" in result.output, result.output
        vm = creds.read_creds(layout.invites_dir(env) + "/vm.json")
        assert vm.seed  # an NKey, let in by the reloaded server
        nc = await _eventually_connect(hub.client_url(), vm)
        await nc.close()
        # rotated: vm's new credential is let in, its old one refused; same name, same queue
        result = CliRunner().invoke(app, ["hub", "rotate", "vm", "--out", str(
            layout.invites_dir(env) + "/vm2.json")])
        assert result.exit_code == 0 and "old credential of vm no longer works" in \
            result.output, result.output
        vm2 = creds.read_creds(layout.invites_dir(env) + "/vm2.json")
        assert vm2.seed and vm2.seed != vm.seed and vm2.user == "vm"
        nc = await _eventually_connect(hub.client_url(), vm2)
        await nc.close()
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await _eventually_refused(hub.client_url(), vm)
        unknown = CliRunner().invoke(app, ["hub", "rotate", "nobody"])
        assert unknown.exit_code == 1 and "not a host of this hub" in unknown.output
        # revoked: refused from now on
        result = CliRunner().invoke(app, ["hub", "revoke", "box"])
        assert result.exit_code == 0, result.output
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await _eventually_refused(hub.client_url(), box)
    finally:
        embedded.stop()
    assert embedded.proc is None and not os.path.exists(layout.server_pid(env))


async def test_the_hub_signs_in_with_a_key_and_its_servers_config_holds_no_secret_of_it(
        hub_config):
    """The hub's own login is an NKey: ``hub.json`` (0600) keeps its seed, the server's
    configuration only its public half.  A hub made when it signed in with a password gets
    a key at its next start (``creds.hub_nkey``), and the old password is refused then."""
    env, _port = hub_config
    hub = settings.from_config(config.load(env).extra)
    old = "an-old-hub-password-from-before-keys"
    os.makedirs(os.path.dirname(layout.hosts_file(env)), exist_ok=True)
    with open(layout.hosts_file(env), "w") as fh:
        json.dump({"hub": {"password": old}, "hosts": {}}, fh)
    assert creds.hub_creds(env).password == old  # as it signed in before
    creds.hub_nkey(env)  # (compose_hub, as the hub starts)
    me = creds.hub_creds(env)
    assert me.seed.startswith("SU") and not me.password
    embedded = server.EmbeddedServer(env, hub)
    embedded.start()
    try:
        conf = open(layout.server_config(env)).read()
        assert creds.hub_public_key(env) in conf
        assert me.seed not in conf and old not in conf and "password" not in conf
        nc = await _eventually_connect(hub.client_url(), me)
        js = nc.jetstream()
        await js.account_info()  # the hub's every right
        await nc.close()
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await _eventually_refused(hub.client_url(), creds.Creds("hub", old))
    finally:
        embedded.stop()
    # a new hub starts with a key
    os.remove(layout.hosts_file(env))
    assert creds.hub_creds(env).seed and "password" not in json.load(
        open(layout.hosts_file(env)))["hub"]


def _login(who):
    return {"nkeys_seed_str": who.seed} if who.seed else {"user": who.user,
                                                         "password": who.password}


async def _eventually_connect(url, who, tries=50):
    import asyncio

    for _ in range(tries):
        try:
            return await nats.connect(url, **_login(who), max_reconnect_attempts=0,
                                      allow_reconnect=False)
        except (nats.errors.Error, OSError):
            await asyncio.sleep(0.1)
    raise AssertionError("never let in")


async def _eventually_refused(url, who, tries=50):
    import asyncio

    for _ in range(tries):
        nc = None
        try:
            nc = await nats.connect(url, **_login(who), max_reconnect_attempts=0,
                                    allow_reconnect=False)
        except OSError:
            pass  # reset while the server reloads its users: ask again
        finally:
            if nc is not None:
                await nc.close()
        await asyncio.sleep(0.1)


def test_join_needs_a_credential_file(tmp_path):
    result = CliRunner().invoke(app, ["start", "--join", "nats://127.0.0.1:4222"])
    assert result.exit_code == 3 and "--creds" in result.output
    bad = tmp_path / "creds.json"
    bad.write_text("{}")
    result = CliRunner().invoke(app, ["start", "--join", "nats://x:4222", "--creds", str(bad)])
    assert result.exit_code == 3 and "credential file" in result.output
    result = CliRunner().invoke(app, ["start", "--hub", "--creds", str(bad)])
    assert result.exit_code == 3 and "exclude" in result.output


@pytest.fixture
def fake_main(monkeypatch):
    """A stand-in for aipager.main that records how ``start`` ran it."""
    import sys
    import types

    calls = []
    module = types.ModuleType("aipager.main")

    def run(env, verbose=False, cfg=None, **kw):
        calls.append({"cfg": cfg, **kw})
        return 0

    module.run = run
    monkeypatch.setitem(sys.modules, "aipager.main", module)
    return calls


def test_start_join_runs_a_host_without_any_config(fake_main, tmp_path):
    ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    who = creds.write_creds(str(tmp_path / "box.json"),
                            creds.Creds("box", "pw", "nats://hub.lan:4222", ca))
    from aipager.install import claude_code

    env = dict(os.environ)
    assert claude_code.check(env)  # a fresh machine: Claude Code not wired
    result = CliRunner().invoke(app, ["start", "--creds", who])
    assert result.exit_code == 0, result.output
    assert fake_main == [{"cfg": None, "join": "nats://hub.lan:4222", "creds": who}]
    assert not config.exists(env)
    # the host wires Claude Code's hooks as `aipager setup` would (no setup on a host)
    assert claude_code.check(env) == []
    assert "Wired Claude Code" in result.output
    result = CliRunner().invoke(app, ["start", "--join", "nats://other:4222", "--creds", who])
    assert fake_main[-1]["join"] == "nats://other:4222"


def test_start_join_puts_the_credential_file_in_the_published_floor(fake_main, tmp_path,
                                                                      monkeypatch):
    """Wherever the person keeps the credential file, `start --join` records its absolute
    path, and the floor the daemon publishes keeps it from every task but the owner's."""
    from aipager.daemon.floorwatch import FloorPublisher
    from aipager.policy import _match_py, model

    env = dict(os.environ)
    folder = tmp_path / "keys here"
    folder.mkdir()
    creds.write_creds(str(folder / "box.json"), creds.Creds("box", "pw", "nats://127.0.0.1:4222"))
    monkeypatch.chdir(folder)
    result = CliRunner().invoke(app, ["start", "--creds", "box.json"])
    assert result.exit_code == 0, result.output
    path = str(folder / "box.json")
    record = paths.joined_hub_file(env)
    with open(record) as fh:
        assert json.load(fh) == {"url": "nats://127.0.0.1:4222", "creds": path}
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600

    assert FloorPublisher(env).check() is True  # the daemon, at its start
    with open(paths.floor_file(env)) as fh:
        assert path in json.load(fh)["rules"]["no_access"]
    policy = model.load_policy(env)
    read = ("Read", {"file_path": path}, str(tmp_path), env["HOME"])
    assert _match_py.decide(model.task_snapshot(policy, "user", env, 7), *read)[0] == "deny"
    assert _match_py.decide(model.task_snapshot(policy, "admin", env, 5), *read)[0] == "deny"
    assert _match_py.decide(model.task_snapshot(policy, "owner", env, 1), *read)[0] == "allow"


def test_start_hub_runs_the_hub_with_the_config(fake_main, hub_config):
    result = CliRunner().invoke(app, ["start", "--hub"])
    assert result.exit_code == 0, result.output
    assert fake_main[0]["hub"] is True and fake_main[0]["cfg"].chat_id == OWNER["id"]


def test_doctor_on_a_joined_host_checks_the_hub_not_a_bot(fake_main, tmp_path):
    """Issue 34: on a host doctor asked for `aipager setup` (a bot token the host has not)
    and said nothing of the hub: it checks the credential, the address and the link."""
    ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    who = creds.write_creds(str(tmp_path / "box.json"),
                            creds.Creds("box", "pw", "nats://hub.lan:4222", ca))
    assert CliRunner().invoke(app, ["start", "--creds", who]).exit_code == 0
    result = CliRunner().invoke(app, ["doctor", "--json"])
    doc = {c["name"]: c for c in json.loads(result.output)}
    assert not {"config", "token", "chat", "group"} & set(doc)
    assert doc["hub creds"]["ok"] and "host box" in doc["hub creds"]["detail"]
    assert doc["hub address"]["ok"] and "nats://hub.lan:4222" in doc["hub address"]["detail"]
    assert doc["settings.json"]["ok"]  # wired by the join
    assert not doc["daemon"]["ok"]
    assert doc["daemon"]["fix"].startswith(
        f"run `aipager start --join nats://hub.lan:4222 --creds {who}`")
    assert "service install --join" in doc["daemon"]["fix"]
    assert not [c for c in doc.values() if "aipager setup" in c["fix"]]

    os.unlink(who)  # the credential file moved away
    doc = {c["name"]: c for c in json.loads(CliRunner().invoke(app, ["doctor", "--json"]).output)}
    assert not doc["hub creds"]["ok"] and "new invite" in doc["hub creds"]["fix"]

    # a chat set up here makes the machine a single one again: doctor checks the chat
    config.save(dict(os.environ), config.Config(bot_token=TOKEN, chat_id=OWNER["id"]))
    doc = {c["name"]: c for c in json.loads(
        CliRunner().invoke(app, ["doctor", "--json", "--offline"]).output)}
    assert "config" in doc and "hub creds" not in doc
