"""The page and its JSON API: one aiohttp application.

=====================================  ==========================================
``GET /`` (``?token=…``)               the page; a login link's token becomes the
                                       session cookie, then a redirect drops it
``GET /static/…``                      the page's modules, style and icons (from the package)
``GET /manifest.webmanifest``           the page as an installable app
``GET /strings`` (``?lang=…``)         the page's words in the person's language
``GET /api/me``                        who the page acts as, and their rights
``GET /api/state``                     sessions, what needs you, who you are
``GET /api/sessions``                  every session: state, model, context, cost, card
``GET /api/sessions/{name}``           one session and its conversation
``GET /api/folders``                   where a session may start: trusted folders first
``GET /api/sessions/{name}/changes``    what it changed in its folder (``git diff``)
``POST /api/sessions``                 ``{"name"[,"folder","mode","agent"]}``: start a session
``POST /api/sessions/{name}/prompt``   ``{"text"[,"once"]}``: send a prompt (once per key)
``POST /api/sessions/{name}/files``    files for a prompt (multipart): their paths
``POST /api/sessions/{name}/stop``     stop the running task
``POST /api/sessions/{name}/kill``     end the session
``POST /api/sessions/{name}/trust``    ``{"act":"yes"|"no"}``: its folder trust dialog
``POST /api/answer``                   ``{"session","key","act"[,"reason"]}``: a permission
``POST /api/question``                 ``{"session","key","answers"|null}``: a question
``POST /api/form``                     ``{"session","key","action"[,"content"]}``: an MCP
                                       server's form (accept with content, decline, cancel)
``GET /api/audit``                     the audit log's last records (admins)
``GET /api/files/{key}``               a file Claude sent, as a download
``GET /api/events``                    the live stream (server-sent events)
``POST /api/signout``                  forget this browser
=====================================  ==========================================
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from importlib import resources
from typing import Any
from urllib.parse import quote

from aiohttp import BodyPartReader, web

from aipager import locales
from aipager.locales import tr as _
from aipager.clients.people import Sender
from aipager.port import forms
from aipager.port.commands import ReadAudit
from aipager.port.results import AuditRecords
from aipager.port.rights import check
from aipager.web import strings, views
from aipager.web.actions import Result, WebActions
from aipager.web.auth import COOKIE, SESSION_TTL, Logins
from aipager.web.gate import SENDER, VIA, add_headers, make_middlewares
from aipager.web.live import WebNotifier
from aipager.web.who import People

log = logging.getLogger("aipager.web")

#: a comment line on the live stream this often keeps proxies from closing it
KEEPALIVE_SECONDS = 15.0
STATIC = resources.files("aipager.web") / "static"

ACTIONS = web.AppKey("actions", WebActions)
LIVE = web.AppKey("live", WebNotifier)
LOGINS = web.AppKey("logins", Logins)
PEOPLE = web.AppKey("people", People)


def _sender(request: web.Request) -> Sender:
    return request[SENDER]


def _reply(result: Result) -> web.Response:
    return web.json_response(result.to_json(), status=200 if result.ok else 409)


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise web.HTTPBadRequest(text="expected a JSON object") from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="expected a JSON object")
    return body


def _session(request: web.Request):
    sess = request.app[ACTIONS].find(request.match_info["name"])
    if sess is None:
        raise web.HTTPNotFound(text="no such session")
    return sess


# -- the page ---------------------------------------------------------------------------


async def index(request: web.Request) -> web.StreamResponse:
    token = request.query.get("token")
    if token is None:
        return web.Response(body=(STATIC / "index.html").read_bytes(),
                            content_type="text/html", charset="utf-8")
    cookie = request.app[LOGINS].exchange(token)
    if cookie is None:
        # in the browser's language (the ``language`` middleware): a person reads this
        return web.Response(status=403, content_type="text/plain", text=_(
            "This sign-in link was used already or is not valid. `aipager page` on this "
            "machine prints a new one."))
    # away from the token: it never stays in the address bar or the history
    response = web.Response(status=303, headers={"Location": "/"})
    response.set_cookie(COOKIE, cookie, max_age=SESSION_TTL, path="/", httponly=True,
                        samesite="Strict", secure=request.secure)
    return response


async def manifest(request: web.Request) -> web.Response:
    """The page as an installable app (a phone's "Add to Home screen"): its name and icons."""
    return web.Response(body=(STATIC / "manifest.webmanifest").read_bytes(),
                        content_type="application/manifest+json", charset="utf-8")


# -- reading ----------------------------------------------------------------------------


def _cards(live: WebNotifier) -> dict[str, str]:
    return {name: card.text for name, card in live.cards.items()}


async def get_strings(request: web.Request) -> web.Response:
    locale = strings.pick(request.query.get("lang"), request.headers.get("Accept-Language", ""))
    return web.json_response({"locale": locale, "strings": strings.strings(locale),
                              # the page's language menu: each in its own words
                              "languages": [{"code": code, "name": locales.NAMES[code]}
                                            for code in locales.LOCALES]})


async def get_me(request: web.Request) -> web.Response:
    return web.json_response(views.me(_sender(request), request[VIA],
                                      request.app[PEOPLE].private()))


async def get_state(request: web.Request) -> web.Response:
    actions, live = request.app[ACTIONS], request.app[LIVE]
    sessions = list(actions.port.sessions)
    sender = _sender(request)
    return web.json_response({
        "me": views.me(sender, request[VIA], request.app[PEOPLE].private()),
        "sessions": views.sessions(sessions, time.time(), _cards(live),
                                   views.offline_hosts(actions.port.hosts())),
        "needs": views.needs(sessions, live.asked, sender, actions.at_trust_dialog),
        "seq": live.seq,
    })


async def get_sessions(request: web.Request) -> web.Response:
    actions, live = request.app[ACTIONS], request.app[LIVE]
    return web.json_response(views.sessions(actions.port.sessions, time.time(), _cards(live),
                                            views.offline_hosts(actions.port.hosts())))


async def get_session(request: web.Request) -> web.Response:
    sess = _session(request)
    actions, live = request.app[ACTIONS], request.app[LIVE]
    return web.json_response({
        "session": views.session(sess, time.time(), _cards(live).get(sess.name),
                                 views.offline_hosts(actions.port.hosts())),
        # what this session waits for, with its buttons (as on the first page; a chat
        # message in private mode opens here)
        "needs": views.needs(list(actions.port.sessions), live.asked, _sender(request),
                             actions.at_trust_dialog, only=sess.name),
        "conversation": views.conversation(sess, live.conversation(sess.name)),
    })


async def get_changes(request: web.Request) -> web.Response:
    """What the session changed in its folder (the service decides what this person may
    see); a refusal is a 200 with ``ok`` false and the words, as the acting calls answer."""
    actions = request.app[ACTIONS]
    return web.json_response(await actions.changes(_session(request), _sender(request)))


async def get_audit(request: web.Request) -> web.Response:
    try:
        limit = int(request.query.get("limit", "100"))
    except ValueError:
        limit = 100
    result = await request.app[ACTIONS].port.ask(ReadAudit(_sender(request), limit))
    if not isinstance(result, AuditRecords):
        raise web.HTTPForbidden(text="only an admin may read the audit log")
    return web.json_response(list(result.records))


async def get_file(request: web.Request) -> web.StreamResponse:
    """A file Claude sent, as a download (never shown inline: it is not the page's own)."""
    found = request.app[ACTIONS].download(request.match_info["key"])
    if found is None:
        raise web.HTTPNotFound(text="no such file (kept a day, and until aipager restarts)")
    path, name = found
    return web.FileResponse(path, headers={
        "Content-Type": "application/octet-stream",
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote(name, safe='')}"})


async def events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: one per daemon output (``{"kind","session","seq"}``)."""
    live = request.app[LIVE]
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "X-Accel-Buffering": "no"})
    await response.prepare(request)
    queue = live.subscribe()
    try:
        await response.write(f"event: hello\ndata: {json.dumps({'seq': live.seq})}\n\n".encode())
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
            except asyncio.TimeoutError:
                await response.write(b": keep-alive\n\n")
                continue
            if event is None:
                break
            await response.write(f"event: output\ndata: {json.dumps(event)}\n\n".encode())
    except ConnectionResetError:
        pass  # the page went away
    finally:
        live.unsubscribe(queue)
    return response


# -- acting -----------------------------------------------------------------------------


async def post_session(request: web.Request) -> web.Response:
    body = await _body(request)
    return _reply(await request.app[ACTIONS].start(str(body.get("name") or ""), _sender(request),
                                                   str(body.get("folder") or "").strip(),
                                                   str(body.get("mode") or ""),
                                                   str(body.get("agent") or "")))


async def get_folders(request: web.Request) -> web.Response:
    if check(_sender(request), "manage") is not None:  # the right StartSession names
        raise web.HTTPForbidden(text="only an admin starts sessions")
    return web.json_response(await asyncio.to_thread(request.app[ACTIONS].folders))


async def post_trust(request: web.Request) -> web.Response:
    body = await _body(request)
    return _reply(await request.app[ACTIONS].trust(_session(request), _sender(request),
                                                   body.get("act") == "yes"))


async def post_prompt(request: web.Request) -> web.Response:
    body = await _body(request)
    text = body.get("text")
    if not isinstance(text, str):
        raise web.HTTPBadRequest(text="text must be a string")
    once = body.get("once")
    return _reply(await request.app[ACTIONS].prompt(_session(request), text, _sender(request),
                                                    once if isinstance(once, str) else ""))


#: files one upload may carry
UPLOAD_FILES = 10
#: bytes one upload may carry in all (as much as Telegram lets the chat fetch of one file):
#: what the daemon holds in memory for it is bounded, whoever sends it
UPLOAD_TOTAL = 20 * 1024 * 1024


async def post_files(request: web.Request) -> web.Response:
    """Files from the page for a prompt (multipart ``file`` parts): kept in the person's own
    folder as the chat keeps a photo or a document; the answer names their paths, which the
    page puts in the prompt."""
    from aipager import files

    sess = _session(request)
    try:
        reader = await request.multipart()
    except (AssertionError, ValueError, KeyError):
        raise web.HTTPBadRequest(text="expected multipart/form-data") from None
    got: list[tuple[str, bytes]] = []
    total = 0
    while len(got) < UPLOAD_FILES:
        part = await reader.next()
        if part is None:
            break
        if not isinstance(part, BodyPartReader) or part.name != "file":
            continue
        data = bytearray()
        while chunk := await part.read_chunk(1 << 16):
            data += chunk
            if len(data) > files.DOWNLOAD_MAX:
                return _reply(Result(False, _("📎 {name} is larger than {limit} MB: put it "
                                              "on the computer another way.").format(
                    name=part.filename or "file", limit=files.DOWNLOAD_MAX >> 20)))
            if total + len(data) > UPLOAD_TOTAL:
                return _reply(Result(False, _("📎 These files come to more than {limit} MB "
                                              "together: send fewer at once.").format(
                    limit=UPLOAD_TOTAL >> 20)))
        total += len(data)
        got.append((part.filename or "file", bytes(data)))
    result, kept = await request.app[ACTIONS].upload(sess, _sender(request), got)
    return web.json_response({**result.to_json(), "paths": kept},
                             status=200 if result.ok else 409)


async def post_stop(request: web.Request) -> web.Response:
    return _reply(await request.app[ACTIONS].stop(_session(request), _sender(request)))


async def post_kill(request: web.Request) -> web.Response:
    return _reply(await request.app[ACTIONS].kill(_session(request), _sender(request)))


async def post_answer(request: web.Request) -> web.Response:
    body = await _body(request)
    actions = request.app[ACTIONS]
    sess = actions.port.sessions.get(str(body.get("session") or ""))
    reason = body.get("reason")
    reason = reason if isinstance(reason, str) else ""
    return _reply(await actions.answer(sess, str(body.get("key") or ""),
                                       str(body.get("act") or ""), _sender(request), reason))


async def post_question(request: web.Request) -> web.Response:
    body = await _body(request)
    actions = request.app[ACTIONS]
    sess = actions.port.sessions.get(str(body.get("session") or ""))
    answers = body.get("answers")
    if answers is not None and not (isinstance(answers, list)
                                    and all(isinstance(a, dict) for a in answers)):
        raise web.HTTPBadRequest(text="answers: a list of {picks, text}, or null to decline")
    try:
        result = await actions.answer_question(sess, str(body.get("key") or ""),
                                               _sender(request), answers)
    except (TypeError, ValueError) as exc:
        raise web.HTTPBadRequest(text=f"answers do not fit: {exc}") from None
    return _reply(result)


async def post_form(request: web.Request) -> web.Response:
    """An MCP server's form: ``action`` accept (``content``: field → value, typed as the
    form asks: numbers as numbers, yes/no as true/false), decline or cancel.  The daemon
    checks the values: one that does not fit is refused with the reason, nothing sent."""
    body = await _body(request)
    actions = request.app[ACTIONS]
    sess = actions.port.sessions.get(str(body.get("session") or ""))
    action = body.get("action")
    if action not in forms.ACTIONS:
        raise web.HTTPBadRequest(text="action: one of accept, decline, cancel")
    content = body.get("content")
    if content is None:
        content = {}
    if not isinstance(content, dict):
        raise web.HTTPBadRequest(text="content must be an object: field name → value")
    return _reply(await actions.answer_form(sess, str(body.get("key") or ""), _sender(request),
                                            action, content))


async def post_signout(request: web.Request) -> web.Response:
    request.app[LOGINS].sign_out(request.cookies.get(COOKIE))
    response = web.json_response({"ok": True})
    response.del_cookie(COOKIE, path="/")
    return response


@web.middleware
async def language(request: web.Request, handler: Any) -> web.StreamResponse:
    """What the server says in words (an action's result, a request's text and buttons) is in
    the page user's language: the one the page names (``LANG_HEADER``), else the browser's."""
    locale = strings.pick(request.headers.get(strings.LANG_HEADER),
                          request.headers.get("Accept-Language", ""))
    with locales.rendering(strings.catalog(locale)):
        return await handler(request)


def make_app(actions: WebActions, live: WebNotifier, logins: Logins, people: People, *,
             allowed_hosts: frozenset[str], allowed_origins: frozenset[str],
             frame_ancestors: str = "'none'") -> web.Application:
    """The application: the gate's middlewares, the routes, the security headers."""
    app = web.Application(middlewares=[*make_middlewares(people, logins, allowed_hosts,
                                                         allowed_origins), language],
                          client_max_size=256 * 1024)
    app[ACTIONS], app[LIVE], app[LOGINS], app[PEOPLE] = actions, live, logins, people
    app.on_response_prepare.append(add_headers(frame_ancestors))
    r = app.router
    r.add_get("/", index)
    r.add_get("/manifest.webmanifest", manifest)
    r.add_static("/static", str(STATIC), show_index=False, follow_symlinks=False)
    r.add_get("/strings", get_strings)
    r.add_get("/api/me", get_me)
    r.add_get("/api/state", get_state)
    r.add_get("/api/sessions", get_sessions)
    r.add_post("/api/sessions", post_session)
    r.add_get("/api/sessions/{name}", get_session)
    r.add_get("/api/sessions/{name}/changes", get_changes)
    r.add_post("/api/sessions/{name}/prompt", post_prompt)
    r.add_post("/api/sessions/{name}/files", post_files)
    r.add_post("/api/sessions/{name}/stop", post_stop)
    r.add_post("/api/sessions/{name}/kill", post_kill)
    r.add_post("/api/sessions/{name}/trust", post_trust)
    r.add_get("/api/folders", get_folders)
    r.add_post("/api/answer", post_answer)
    r.add_post("/api/question", post_question)
    r.add_post("/api/form", post_form)
    r.add_get("/api/audit", get_audit)
    r.add_get("/api/files/{key}", get_file)
    r.add_get("/api/events", events)
    r.add_post("/api/signout", post_signout)
    return app


__all__ = ["make_app"]
