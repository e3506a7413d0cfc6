"""The web page's server on a fake daemon port: who gets in (Host, cookie, initData, Origin),
and what each action asks of the daemon, with the chat's rules."""

from __future__ import annotations

import asyncio
import json
import time

from aipager.port.model import State, Task
from aipager.port.outputs import (Card, Notice, NoticeName, Permission, Prompted, Reaction,
                                     Release)
from aipager.port.backend import ByHook, Who

from .conftest import COOKIE, GUEST_ID, OWNER_ID, READER_ID, init_data

S = "claude-jim"
KEY = "p:t1:"
GUEST = {"id": GUEST_ID, "first_name": "Guest", "username": "guest"}
OWNER = {"id": OWNER_ID, "first_name": "Owner"}
READER = {"id": READER_ID, "first_name": "Reader"}


def tma(user: dict, **kw) -> dict[str, str]:
    return {"Authorization": f"tma {init_data(user, **kw)}"}


# -- who gets in ---------------------------------------------------------------------------


async def test_a_wrong_host_is_refused(web):
    await web.sign_in()
    for path in ("/", "/api/state", "/static/app.js"):
        response = await web.client.get(path, headers={"Host": "evil.example:7180"})
        assert response.status == 421, path
    response = await web.client.get("/api/state", headers={"Host": "localhost:7180"})
    assert response.status == 421


async def test_without_the_cookie_the_api_says_nothing(web):
    for path in ("/api/state", "/api/sessions", "/api/me", "/api/events", "/api/audit"):
        response = await web.get(path)
        assert response.status == 401, path
    response = await web.post("/api/sessions", {"name": "x"})
    assert response.status == 401
    # the page itself carries no data: served to anyone who names this server
    page = await web.get("/")
    assert page.status == 200 and "aipager" in await page.text()


async def test_the_login_link_becomes_a_strict_cookie_and_is_dropped(web):
    token = web.logins.issue()
    response = await web.client.get(f"/?token={token}", headers=web.headers(),
                                    allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == "/"
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert token not in cookie
    me = await web.get("/api/me")
    assert me.status == 200 and (await me.json())["role"] == "owner"
    again = await web.client.get(f"/?token={token}", headers=web.headers(),
                                 allow_redirects=False)
    assert again.status == 403  # one time only


async def test_a_forged_or_stale_initdata_is_refused(web):
    forged = init_data(OWNER).replace("Owner", "Admin")
    response = await web.get("/api/me", Authorization=f"tma {forged}")
    assert response.status == 401
    stale = await web.get("/api/me", **tma(OWNER, auth_date=1))
    assert stale.status == 401
    # past the hour: the page hears why (it tells the person to open the app again)
    hour_old = await web.get("/api/me", **tma(OWNER, auth_date=int(time.time()) - 3700))
    assert hour_old.status == 401 and "too old" in (await hour_old.json())["error"]
    ahead = await web.get("/api/me", **tma(OWNER, auth_date=int(time.time()) + 600))
    assert ahead.status == 401 and "future" in (await ahead.json())["error"]
    stranger = await web.get("/api/me", **tma({"id": 999, "first_name": "Eve"}))
    assert stranger.status == 403


async def test_a_mini_app_user_acts_with_their_aipager_role(web):
    owner = await (await web.get("/api/me", **tma(OWNER))).json()
    guest = await (await web.get("/api/me", **tma(GUEST))).json()
    reader = await (await web.get("/api/me", **tma(READER))).json()
    assert (owner["role"], owner["via"]) == ("owner", "telegram")
    assert (guest["label"], guest["role"], guest["may"]["manage"]) == ("@guest", "user", False)
    assert reader["may"] == {"prompt": False, "approve": False, "manage": False}


async def test_changes_and_the_live_stream_need_the_pages_own_origin(web):
    await web.sign_in()
    web.port.add_session(S)
    body = {"text": "hello"}
    cross = await web.post(f"/api/sessions/{S}/prompt", body, Origin="http://evil.example")
    assert cross.status == 403
    no_origin = await web.client.post(f"/api/sessions/{S}/prompt", json=body, headers=web.headers())
    assert no_origin.status == 403
    stream = await web.get("/api/events", **{"Sec-Fetch-Site": "cross-site"})
    assert stream.status == 403
    silent = await web.get("/api/events")  # a cookie, and nothing says where it comes from
    assert silent.status == 403
    webview = await web.get("/api/events", **tma(OWNER))  # the Mini App's bearer header
    assert webview.status == 200
    webview.close()
    forged = await web.get("/api/events", Origin="http://evil.example", **tma(OWNER))
    assert forged.status == 403
    assert web.port.calls("type_prompt") == []


async def test_every_response_has_a_strict_content_security_policy(web):
    await web.sign_in()
    for path in ("/", "/api/state", "/static/app.js"):
        response = await web.get(path)
        policy = response.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy, path
        assert "frame-ancestors 'none'" in policy
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    script = await web.get("/static/app.js")
    assert "javascript" in script.headers["Content-Type"]


# -- what the page shows -------------------------------------------------------------------


async def test_a_new_prompt_is_in_the_conversation_before_its_first_card(web):
    """A task's first card waits for the daemon's tick (the chat's calm); the page shows the
    prompt as soon as the task begins: typed at the computer, or a chat message taken."""
    await web.sign_in()
    web.port.add_session(S, State.WORKING)
    sess = web.port.sessions.get(S)
    sess.task = Task(seq=1, started_at=sess.registered_at, prompt="typed here")
    web.live.emit(Prompted(session=S, text="⌨️ jim · typed at the computer:\ntyped here", task=1))
    talk = (await (await web.get(f"/api/sessions/{S}")).json())["conversation"]
    assert [(e["kind"], e["text"]) for e in talk] == [("prompt", "typed here")]
    sess.task = Task(seq=2, started_at=sess.registered_at, prompt="from the chat",
                     authors=[{"user_id": 4242, "label": "owner", "msg_id": 7}])
    web.live.emit(Reaction(session=S, chat_id="4242", msg_id="7", emoji="👍"))
    talk = (await (await web.get(f"/api/sessions/{S}")).json())["conversation"]
    assert [(e["kind"], e["text"]) for e in talk][-1] == ("prompt", "from the chat")
    # its card later adds nothing more
    web.live.emit(Card(session=S, text="⏳ jim · working", task=2))
    talk = (await (await web.get(f"/api/sessions/{S}")).json())["conversation"]
    assert [e["text"] for e in talk].count("from the chat") == 1


async def test_sessions_show_state_and_their_live_card(web):
    await web.sign_in()
    web.port.add_session(S, State.WORKING)
    sess = web.port.sessions.get(S)
    sess.model, sess.context_pct, sess.cost_usd = "opus", 41.0, 0.04
    sess.task = Task(seq=1, started_at=sess.registered_at, prompt="fix it")
    web.live.emit(Card(session=S, text="⏳ jim · working\n✓ Bash: ls", task=1))
    (shown,) = await (await web.get("/api/sessions")).json()
    assert (shown["label"], shown["state"], shown["model"], shown["context_pct"],
            shown["cost_usd"]) == ("jim", "working", "opus", 41.0, 0.04)
    assert shown["card"] == "⏳ jim · working\n✓ Bash: ls"
    talk = (await (await web.get(f"/api/sessions/{S}")).json())["conversation"]
    assert [(e["kind"], e["text"]) for e in talk] == [("prompt", "fix it")]
    # a page in Portuguese: the card and a notice rendered again in it, from their facts
    web.live.emit(Notice(session=S, text="⚠️ jim · Context at 91% - will compact soon",
                         notice=NoticeName.CONTEXT_WARNING, extra={"pct": 91.0}))
    shown = await (await web.get(f"/api/sessions/{S}", **{"X-Aipager-Lang": "pt-br"})).json()
    assert shown["session"]["card"].startswith("⏳ jim · trabalhando · ")
    notice = shown["conversation"][-1]
    assert notice == {"id": notice["id"], "kind": "notice", "at": notice["at"],
                      "text": "⚠️ jim · Contexto em 91% - será compactado em breve"}


async def test_the_live_stream_says_when_the_daemon_showed_something(web):
    await web.sign_in()
    response = await web.get("/api/events", **{"Sec-Fetch-Site": "same-origin"})
    assert response.status == 200 and response.headers["Content-Type"] == "text/event-stream"
    assert (await response.content.readuntil(b"\n\n")).startswith(b"event: hello")
    web.live.emit(Card(session=S, text="⏳ jim", task=1))
    line = await asyncio.wait_for(response.content.readuntil(b"\n\n"), 5)
    event = json.loads(line.decode().split("data: ", 1)[1])
    assert (event["kind"], event["session"]) == ("card", S)
    response.close()


# -- acting, with the chat's rules ---------------------------------------------------------


async def test_a_prompt_from_the_local_page_is_typed_with_the_owners_note(web):
    await web.sign_in()
    web.port.add_session(S)
    result = await (await web.post(f"/api/sessions/{S}/prompt", {"text": "run the tests"})).json()
    assert result["outcome"] == "typed", result
    ((session, text), kw), = web.port.calls("type_prompt")
    assert (session, text) == (S, "run the tests")
    note = kw["note"]
    assert (note["author_label"], note["role"], note["chat_id"], note["text"]) == \
        ("web", "owner", 0, "run the tests")
    (audit,) = [a for a, k in web.port.calls("audit_action") if a[0] == "chat_prompt"]
    assert audit[1] == Who("web", note["author_user_id"], "owner")


async def test_a_members_shell_line_goes_to_the_daemon_as_words_and_is_audited(web):
    """The page refuses nothing for what Claude Code might read in it: the daemon types
    the one encoding (``policy.chatprompt``) with the member's note."""
    web.port.add_session(S)
    response = await web.post(f"/api/sessions/{S}/prompt", {"text": "!rm -rf ~"}, **tma(GUEST))
    assert response.status == 200, await response.text()
    [(args, kwargs)] = web.port.calls("type_prompt")
    assert args[1] == "!rm -rf ~" and kwargs["note"]["author_user_id"] == GUEST_ID
    (typed,) = [(a, k) for a, k in web.port.calls("audit_action") if a[0] == "chat_prompt"]
    assert typed[0][1].user_id == GUEST_ID


async def test_a_members_message_waits_for_anothers_task_then_goes_in_with_their_rights(web):
    web.port.add_session(S, State.WORKING)
    sess = web.port.sessions.get(S)
    sess.task = Task(seq=1, started_at=0.0, authors=[{"user_id": OWNER_ID, "label": "owner"}])
    result = await (await web.post(f"/api/sessions/{S}/prompt", {"text": "me next"},
                                   **tma(GUEST))).json()
    assert result["outcome"] == "held" and "queued after owner" in result["message"]
    ((_, msg_id, text), kw), = web.port.calls("queue_chat_message")
    assert kw["held"] is True and text == "me next"
    web.live.emit(Release(session=S, text="me next", msg_id=str(msg_id), chat_id="0"))
    (coro,) = web.spawned  # typed on the daemon's loop
    await coro
    ((_, typed), kw), = web.port.calls("type_prompt")
    assert typed == "me next"
    assert (kw["note"]["author_user_id"], kw["note"]["role"]) == (GUEST_ID, "user")
    assert web.port.calls("queue_chat_message")[-1][1]["held"] is True  # not queued again


async def test_answering_needs_the_right_and_names_who(web):
    await web.sign_in()
    web.port.add_session(S, State.WAITING)
    web.port.handler = lambda name, args, kw: ByHook() if name == "answer_request" else None
    web.live.emit(Permission(session=S, text="🔐 jim · Bash\nmake test", key=KEY, tool="Bash",
                             detail="make test", buttons=["allow", "deny", "stop"]))
    reader = await web.post("/api/answer", {"session": S, "key": KEY, "act": "allow"},
                            **tma(READER))
    assert reader.status == 409 and "may not answer" in (await reader.json())["message"]
    assert web.port.calls("answer_request") == []
    ok = await (await web.post("/api/answer", {"session": S, "key": KEY, "act": "deny",
                                               "reason": "not now"})).json()
    assert ok == {"ok": True, "message": "Denied.", "outcome": None}
    ((session, key, kind, who), kw), = web.port.calls("answer_request")
    assert (session, key, kind, who.label, kw["reason"]) == (S, KEY, "deny", "@web", "not now")


async def test_only_an_admin_starts_and_ends_sessions(web):
    web.port.add_session(S)
    refused = await web.post("/api/sessions", {"name": "new1"}, **tma(GUEST))
    assert refused.status == 409 and web.port.calls("start_session") == []
    await web.sign_in()
    started = await (await web.post("/api/sessions", {"name": "new1"})).json()
    assert started["ok"] and web.port.calls("start_session")[0][0] == ("new1",)
    reserved = await web.post("/api/sessions", {"name": "help"})
    assert reserved.status == 409
    web.port.handler = lambda name, args, kw: True if name == "kill_session" else None
    ended = await (await web.post(f"/api/sessions/{S}/kill")).json()
    assert ended["ok"] and web.port.calls("kill_session") == [(("jim",), {})]


async def test_the_audit_log_is_for_admins(web):
    import os

    from aipager.proto import paths

    os.makedirs(os.path.dirname(paths.audit_log(web.port.env)), exist_ok=True)
    with open(paths.audit_log(web.port.env), "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"ts": "2026-01-01T00:00:00Z", "action": "chat_prompt"}) + "\n")
    assert (await web.get("/api/audit", **tma(GUEST))).status == 403
    await web.sign_in()
    records = await (await web.get("/api/audit")).json()
    assert [r["action"] for r in records] == ["chat_prompt"]


async def test_the_servers_words_are_in_the_page_users_language(web):
    """The page names its user's language on every call: results, refusals, a request's text
    and its buttons (each suggestion's too, with the same act) come back in it."""
    from aipager.port.model import Request

    await web.sign_in()
    web.port.add_session(S, State.WAITING)
    sess = web.port.sessions.get(S)
    mode = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    folder = {"type": "addDirectories", "directories": ["/srv/app"], "destination": "session"}
    sess.requests.append(Request(key=KEY, kind="permission", tool="Bash", opened_at=1.0,
                                 detail="make test", suggestions=[folder, mode]))
    web.port.handler = lambda name, args, kw: ByHook() if name == "answer_request" else None
    web.live.emit(Permission(session=S, text="🔐 jim · Bash\nmake test", key=KEY, tool="Bash",
                             detail="make test", buttons=["allow", "deny", "stop", "s0", "s1"],
                             scopes=["📁 Allow, and reads in /srv/app · this session",
                                     "✏️ Accept edits in its folders · this session"]))
    state = await (await web.get("/api/state", **{"X-Aipager-Lang": "pt-br"})).json()
    (need,) = state["needs"]
    assert need["text"].startswith("🔐 jim · Bash\nmake test")
    assert [(a["act"], a["label"]) for a in need["answers"]] == [
        ("allow", "✅ Permitir"), ("deny", "❌ Negar"),
        ("s0", "📁 Permitir, e leituras em /srv/app · esta sessão"),
        ("s1", "✏️ Aceitar edições nas pastas dela · esta sessão"), ("stop", "⏹ Parar")]
    reader = await web.post("/api/answer", {"session": S, "key": KEY, "act": "allow"},
                            **tma(READER), **{"X-Aipager-Lang": "es"})
    assert (await reader.json())["message"] == "Tu rol no permite responder a las solicitudes de Claude."
    ok = await (await web.post("/api/answer", {"session": S, "key": KEY, "act": "deny"},
                               **{"X-Aipager-Lang": "pt-BR"})).json()
    assert ok["message"] == "Negado."
    # without the header, the browser's language; without either, English
    gone = await web.post("/api/answer", {"session": "nope", "key": KEY, "act": "allow"},
                          **{"Accept-Language": "vi-VN,vi;q=0.9"})
    assert (await gone.json())["message"] == "Yêu cầu này không còn mở."
    english = await web.post("/api/answer", {"session": "nope", "key": KEY, "act": "allow"})
    assert (await english.json())["message"] == "This request is no longer open."
