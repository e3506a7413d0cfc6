"""What the page keeps across a restart (``web.keep``): signed-in browsers by their hash
only, conversations, a damaged file set aside."""

from __future__ import annotations

import json
import os

from aipager.proto import paths
from aipager.web.auth import SESSION_TTL, Logins
from aipager.web.keep import Keeper
from aipager.web.live import WebNotifier


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _page(env, clock):
    logins, live = Logins(clock=clock), WebNotifier(clock=clock)
    keeper = Keeper(env, logins, live)
    keeper.load()
    return logins, live, keeper


def test_a_restart_keeps_the_browsers_signed_in_and_the_conversations(tmp_path):
    env = dict(os.environ)
    clock = Clock()
    logins, live, _ = _page(env, clock)
    cookie = logins.exchange(logins.issue())  # no loop: saved at once
    live.say("claude-jim", "sent", "fix it", who="@web", status="typed")
    live.say("claude-jim", "answer", "Fixed.")
    saved = open(paths.page_state_file(env), encoding="utf-8").read()
    assert cookie not in saved and "Fixed." in saved
    assert os.stat(paths.page_state_file(env)).st_mode & 0o777 == 0o600

    logins2, live2, _ = _page(env, clock)
    assert logins2.signed_in(cookie)
    assert [e["text"] for e in live2.conversation("claude-jim")] == ["fix it", "Fixed."]
    # what this run says next follows, never reusing an id
    entry = live2.say("claude-jim", "prompt", "again")
    assert entry["id"] > max(e["id"] for e in live2.conversation("claude-jim")[:-1])
    # signed out: not signed in after the next restart either
    logins2.sign_out(cookie)
    assert not _page(env, clock)[0].signed_in(cookie)


def test_an_expired_or_forged_browser_is_not_kept(tmp_path):
    env = dict(os.environ)
    clock = Clock()
    path = paths.page_state_file(env)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"browsers": {"a" * 64: clock.now - 1, "b" * 64: clock.now + SESSION_TTL * 9,
                                "short": clock.now + 5, "c" * 64: "soon"},
                   "talk": {"claude-jim": [{"id": "x"}, {"id": 3, "kind": "answer",
                                                        "text": "ok", "at": 1.0}]}}, fh)
    os.chmod(path, 0o600)
    logins, live, keeper = _page(env, clock)
    assert logins.signed_in_browsers() == {}
    assert [e["text"] for e in live.conversation("claude-jim")] == ["ok"]


def test_a_damaged_file_is_set_aside_and_the_page_starts_empty(tmp_path):
    env = dict(os.environ)
    path = paths.page_state_file(env)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('{"browsers": {')
    os.chmod(path, 0o600)
    logins, live, keeper = _page(env, Clock())
    assert live.talk == {} and logins.signed_in_browsers() == {}
    assert open(path + ".damaged", encoding="utf-8").read() == '{"browsers": {'
    keeper.save()
    assert json.load(open(path, encoding="utf-8")) == {"browsers": {}, "talk": {}}
