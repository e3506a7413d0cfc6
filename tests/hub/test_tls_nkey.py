"""A hub other machines reach: the embedded nats-server on this machine's own non-loopback
address, with TLS from the hub's own CA, and hosts that log in with an NKey.

What this proves: the hub's real start path (``EmbeddedServer``) makes the CA and the
server certificate and serves TLS on an address that is not loopback; ``hub invite``
puts the CA into the credential file; a host dials that address, verifies the hub with
that CA alone and signs in with its NKey, and a prompt from the chat is typed on it.
Both ends run on one machine (one kernel): the traffic crosses the machine's own
interface address, not a cable, so this says nothing about firewalls or routing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import stat
import subprocess

import nats
import pytest
from bot.conftest import eventually
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI
from hub.conftest import Host, Hub, free_port, hub_sees, instance
from typer.testing import CliRunner

from aipager import config
from aipager.cli.app import app
from aipager.proto.errors import ConfigError
from aipager.hub import creds, names, server, settings, tls
from aipager.hub.conn import connect


def own_address() -> str:
    """This machine's first address that is not loopback (``hostname -I``)."""
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=True).stdout
    found = [a for a in out.split() if ":" not in a and not tls.is_loopback(a)]
    assert found, f"this machine has no IPv4 address beyond loopback ({out!r})"
    return found[0]


@pytest.fixture
def tls_hub(tmp_path, monkeypatch):
    """The hub's instance folder with a config listening on every address and telling hosts
    to dial the machine's own (``advertise``), and its embedded server started as
    ``aipager start --hub`` starts it."""
    address, port = own_address(), free_port()
    env = instance(tmp_path, "hub")
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME",
                "XDG_RUNTIME_DIR", "AIPAGER_INSTANCE_DIR"):
        monkeypatch.setenv(var, env[var])  # the CLI reads os.environ
    config.save(env, config.Config(bot_token=TOKEN, chat_id=OWNER["id"], extra={
        "hub": {"name": "laptop", "listen": f"0.0.0.0:{port}",
                "advertise": f"{address}:{port}"}}))
    hub = settings.from_config(config.load(env).extra)
    assert hub.uses_tls
    embedded = server.EmbeddedServer(env, hub)
    embedded.start()
    try:
        yield env, hub, f"nats://{address}:{port}"
    finally:
        embedded.stop()


def invite(name: str, out: str, *extra: str) -> creds.Creds:
    result = CliRunner().invoke(app, ["hub", "invite", name, "--out", out, *extra])
    assert result.exit_code == 0, result.output
    return creds.read_creds(out)


async def test_a_host_joins_over_tls_with_an_nkey_and_a_prompt_round_trips(tls_hub, tmp_path):
    env, hub_settings, url = tls_hub
    out = str(tmp_path / "box.json")
    box_creds = invite("box", out)
    doc = json.loads(open(out).read())
    assert set(doc) == {"user", "url", "seed", "ca", "hub_key"}  # no password: an NKey
    assert doc["hub_key"].startswith("O")  # the hub's public signing key (hub.signing)
    assert doc["url"] == url and doc["seed"].startswith("SU")
    assert "BEGIN CERTIFICATE" in doc["ca"]
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    conf = open(server.layout.server_config(env)).read()
    public = creds.host_nkeys(env)["box"]
    assert f'nkey: "{public}"' in conf and doc["seed"] not in conf and "tls {" in conf
    for key in ("ca.key", "server.key"):
        assert stat.S_IMODE(os.stat(os.path.join(tls.tls_dir(env), key)).st_mode) == 0o600
    for folder in (tls.tls_dir(env), os.path.dirname(tls.tls_dir(env))):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700

    # the server speaks TLS only, on the address that is not loopback
    host, port = url.removeprefix("nats://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        info = json.loads(raw.recv(4096).decode().removeprefix("INFO "))
    assert info["tls_required"] is True

    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    async with fake.running() as base:
        hub_env = {**env, "AIPAGER_TELEGRAM_API_BASE": base}
        hub_who = dataclasses.replace(creds.hub_creds(env), ca=tls.files(env).ca_pem())
        hub = Hub(hub_env, fake, hub_settings.client_url(), creds=hub_who, hosts=("box",))
        box = Host(instance(tmp_path, "box"), url, "box", creds=box_creds)
        try:
            session = box.start("jim")
            await hub_sees(hub, "claude-jim@box")
            await fake.user_says("/jim fix the failing test")
            typed = await eventually(lambda: box.sessions.typed, 30, "the prompt typed on box")
            assert typed[0][:2] == (session, "fix the failing test")
            box.feed(session, "UserPromptSubmit", prompt="fix the failing test", prompt_id="p1")
            box.feed(session, "Stop", prompt_id="p1", last_assistant_message="Fixed over TLS.")
            await fake.wait_for("sendMessage", lambda p: "Fixed over TLS" in str(p.get("text")))
            assert box.link.connected
        finally:
            await box.stop()
            await hub.stop()


async def test_a_host_is_refused_without_the_hubs_certificate(tls_hub, tmp_path):
    env, hub_settings, url = tls_hub
    box = invite("box", str(tmp_path / "box.json"))

    # another hub's CA: the handshake fails, and the error says the hub is not proven
    other = instance(tmp_path, "other")
    stranger_ca = tls.ensure(other, ["127.0.0.1"]).ca_pem()
    with pytest.raises(ConfigError, match="did not prove it is the hub"):
        await connect(url, dataclasses.replace(box, ca=stranger_ca))
    # a host's link with it: says so once (`aipager status` shows it) and stops trying
    host = Host(instance(tmp_path, "box"), url, "box",
                creds=dataclasses.replace(box, ca=stranger_ca))
    await asyncio.wait_for(host.task, 10)
    assert "did not prove it is the hub" in host.link.facts()["hub_link"]["problem"]
    assert not host.link.connected
    await host.stop()

    # no CA at all, dialling the loopback side of the same TLS hub: told TLS is required
    with pytest.raises(ConfigError, match="requires TLS and the credential file has no hub"):
        await connect(hub_settings.client_url(), dataclasses.replace(box, ca=""))

    # no CA, another machine's address: refused before anything is sent, by the host's
    # start too (one clear line, exit 3)
    with pytest.raises(ConfigError, match="would cross the network unencrypted"):
        await connect(url, dataclasses.replace(box, ca=""))
    plain = str(tmp_path / "plain.json")
    creds.write_creds(plain, dataclasses.replace(box, ca=""))
    result = CliRunner().invoke(app, ["start", "--join", url, "--creds", plain])
    assert result.exit_code == 3 and "unencrypted" in result.output, result.output


async def test_an_nkey_host_is_confined_and_a_tampered_seed_refused(tls_hub, tmp_path):
    env, hub_settings, url = tls_hub
    box = invite("box", str(tmp_path / "box.json"))
    invite("vm", str(tmp_path / "vm.json"), "--password")
    assert creds.host_names(env) == ["box", "vm"]

    # a changed letter in the seed: the file is refused before any connection
    bad = tmp_path / "bad.json"
    doc = json.loads((tmp_path / "box.json").read_text())
    i = 10
    doc["seed"] = doc["seed"][:i] + ("A" if doc["seed"][i] != "A" else "B") + doc["seed"][i + 1:]
    bad.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="NKey seed is damaged"):
        creds.read_creds(str(bad))
    # a well-formed seed the hub never listed: the server refuses it
    seed, _public = creds.new_nkey()
    ctx = tls.client_context(box.ca)
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await nats.connect(url, nkeys_seed_str=seed, tls=ctx, allow_reconnect=False,
                           max_reconnect_attempts=0)

    # the NKey host: its own subjects only
    errors: list[str] = []

    async def on_error(exc):
        errors.append(str(exc))

    nc = await nats.connect(url, nkeys_seed_str=box.seed, tls=ctx, error_cb=on_error,
                            inbox_prefix=names.inbox_prefix("box"), max_reconnect_attempts=0)
    try:
        await nc.publish(names.out_subject("vm"), b"{}")
        await nc.subscribe(names.cmd_subject("vm"))
        await nc.flush()
        await eventually(lambda: len([e for e in errors if "ermissions" in e]) >= 2, 5,
                         "the server's permission violations")
    finally:
        await nc.close()
    joined = " ".join(errors).lower()
    assert "aipager.vm.out" in joined and "aipager.vm.cmd" in joined


@pytest.mark.parametrize(("listen", "tls_on"), [
    ("127.0.0.1:4222", False), ("localhost:4222", False), ("[::1]:4222", False),
    ("0.0.0.0:4222", True), ("192.168.1.5:4222", True), ("[::]:4222", True),
])
def test_the_embedded_server_uses_tls_beyond_loopback(listen, tls_on):
    assert settings.HubSettings("laptop", listen=listen).uses_tls is tls_on
    # a server someone else runs: its own business
    assert not settings.HubSettings("laptop", listen=listen, url="nats://b:4222").uses_tls


def test_a_new_name_makes_a_new_server_certificate_under_the_same_ca(tmp_path):
    from cryptography import x509

    env = instance(tmp_path, "hub")
    first = tls.ensure(env, ["127.0.0.1", "hub.lan"])  # before anything else of the hub's
    assert stat.S_IMODE(os.stat(os.path.dirname(tls.tls_dir(env))).st_mode) == 0o700
    ca, cert = first.ca_pem(), open(first.cert).read()
    assert tls.ensure(env, ["hub.lan", "127.0.0.1"]).ca_pem() == ca
    assert open(first.cert).read() == cert  # the same names: nothing made again
    tls.ensure(env, ["127.0.0.1", "hub.lan", "10.1.2.3"])
    assert tls.files(env).ca_pem() == ca  # the hosts' files stay good
    made = x509.load_pem_x509_certificate(open(first.cert, "rb").read())
    alt = made.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(n) for n in alt.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "10.1.2.3"}
    assert alt.get_values_for_type(x509.DNSName) == ["hub.lan"]
    with pytest.raises(ConfigError, match="hub certificate cannot be read"):
        tls.client_context("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n")
