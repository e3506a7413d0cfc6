"""The web page on ``fakes.port.FakePort``: the real application (gate, routes, actions) on
aiohttp's test server, the daemon faked at its port."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from urllib.parse import urlencode

import pytest
from aiohttp.test_utils import TestClient, TestServer
from fakes.port import FakePort

from aipager import config
from aipager.clients.members import Members
from aipager.web.actions import WebActions
from aipager.web.auth import COOKIE, Logins
from aipager.web.live import WebNotifier
from aipager.web.routes import make_app
from aipager.web.service import Settings
from aipager.web.who import People
from tests.support.door import door

TOKEN = "123456:" + "A" * 35
OWNER_ID = 4242
GUEST_ID = 5151
READER_ID = 6161


def init_data(user: dict, token: str = TOKEN, auth_date: int | None = None,
              **extra: str) -> str:
    """initData as Telegram signs it (``auth.init_data_hash``'s rule, written out again)."""
    fields = {"auth_date": str(int(time.time()) if auth_date is None else auth_date),
              "query_id": "AAH", "user": json.dumps(user, separators=(",", ":")), **extra}
    secret = hmac.new(b"WebAppData", token.encode(), hashlib.sha256).digest()
    check = "\n".join(f"{k}={v}" for k, v in sorted(fields.items()))
    fields["hash"] = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    return urlencode(fields)


class Web:
    """The application on a test server, with a signed-in local browser at hand."""

    def __init__(self, client: TestClient, port: FakePort, live: WebNotifier, logins: Logins,
                 base: str, spawned: list) -> None:
        self.client, self.port, self.live, self.logins, self.base = client, port, live, logins, base
        #: coroutines the page handed to the daemon's loop (a released message's typing)
        self.spawned = spawned
        self.origin = f"http://{base}"

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Host": self.base, **extra}

    async def sign_in(self) -> None:
        token = self.logins.issue()
        response = await self.client.get(f"/?token={token}", headers=self.headers(),
                                         allow_redirects=False)
        assert response.status == 303, await response.text()

    async def get(self, path: str, **headers: str):
        return await self.client.get(path, headers=self.headers(**headers))

    async def post(self, path: str, body: dict | None = None, **headers: str):
        headers.setdefault("Origin", self.origin)
        return await self.client.post(path, json=body or {}, headers=self.headers(**headers))


@pytest.fixture
def cfg():
    return config.Config(bot_token=TOKEN, chat_id=OWNER_ID, members=(
        config.Member(GUEST_ID, "user", "guest"), config.Member(READER_ID, "read_only", "reader")))


@pytest.fixture
async def web(cfg):
    env = dict(os.environ)
    if cfg is not None:
        config.save(env, cfg)
    port = FakePort(env)
    live = WebNotifier(lambda: port.sessions)
    spawned = []
    actions = WebActions(door(port), live, spawned.append)
    logins = Logins()
    people = People(env, Members(env, cfg) if cfg is not None else None)
    people.attach(actions.port)  # as WebPage.attach does
    server = TestServer(make_app(actions, live, logins, people,
                                 allowed_hosts=Settings().hosts(7180),
                                 allowed_origins=Settings().origins(7180)))
    client = TestClient(server)
    await client.start_server()
    try:
        yield Web(client, port, live, logins, "127.0.0.1:7180", spawned)
    finally:
        await client.close()
        for coro in spawned:
            coro.close()


__all__ = ["COOKIE", "GUEST_ID", "OWNER_ID", "READER_ID", "TOKEN", "Web", "init_data"]
