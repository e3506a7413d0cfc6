"""What makes the page an app of its own: files for a prompt, the manifest and icons, and
the Telegram look (server side; the browser side is in test_page_browser)."""

from __future__ import annotations

import os

import aiohttp

from aipager import files
from aipager.port.model import State

from .conftest import GUEST_ID, OWNER_ID, READER_ID, init_data

S = "claude-jim"
GUEST = {"id": GUEST_ID, "first_name": "Guest", "username": "guest"}
READER = {"id": READER_ID, "first_name": "Reader"}


def _form(*named: tuple[str, bytes]) -> aiohttp.FormData:
    form = aiohttp.FormData()
    for name, data in named:
        form.add_field("file", data, filename=name, content_type="application/octet-stream")
    return form


async def _upload(web, form, **headers):
    headers.setdefault("Origin", web.origin)
    return await web.client.post(f"/api/sessions/{S}/files", data=form,
                                 headers=web.headers(**headers))


async def test_files_for_a_prompt_land_in_the_senders_own_folder(web):
    web.port.add_session(S, State.READY)
    await web.sign_in()
    got = await (await _upload(web, _form(("notes.txt", b"hello"), ("../../x.sh", b"#!")))).json()
    assert got["ok"] and len(got["paths"]) == 2
    owner_folder = files.inbox_dir(web.port.env, OWNER_ID)
    for path, data in zip(got["paths"], (b"hello", b"#!"), strict=True):
        assert os.path.dirname(path) == owner_folder  # never outside it, whatever the name
        assert open(path, "rb").read() == data
        assert os.stat(path).st_mode & 0o777 == 0o600
    assert got["message"].startswith("📎 Kept for your message:")
    # a member's go to their own folder, which only their tasks may read
    guest = await (await _upload(web, _form(("a.txt", b"x")),
                                 Authorization=f"tma {init_data(GUEST)}")).json()
    assert os.path.dirname(guest["paths"][0]) == files.inbox_dir(web.port.env, GUEST_ID)
    (audited,) = [c for c in web.port.calls("audit_action") if c[0][0] == "page_upload"
                  and c[0][1].user_id == GUEST_ID]
    assert audited[1]["files"] == 1


async def test_a_reader_a_stranger_and_a_forged_origin_upload_nothing(web):
    web.port.add_session(S, State.READY)
    refused = await _upload(web, _form(("a.txt", b"x")),
                            Authorization=f"tma {init_data(READER)}")
    assert refused.status == 409
    assert (await refused.json())["message"] == "Your role may not send messages to Claude here."
    assert (await _upload(web, _form(("a.txt", b"x")))).status == 401  # not signed in
    await web.sign_in()
    forged = await _upload(web, _form(("a.txt", b"x")), Origin="https://evil.example")
    assert forged.status == 403
    assert not os.path.exists(files.inbox_dir(web.port.env, READER_ID))
    empty = await _upload(web, _form())
    assert empty.status in (400, 409)


async def test_a_file_over_the_limit_is_refused_and_says_so(web, monkeypatch):
    monkeypatch.setattr(files, "DOWNLOAD_MAX", 1000)
    web.port.add_session(S, State.READY)
    await web.sign_in()
    big = await _upload(web, _form(("big.bin", b"x" * 5000)))
    assert big.status == 409
    assert "big.bin is larger than" in (await big.json())["message"]


async def test_the_page_is_an_installable_app(web):
    manifest = await web.get("/manifest.webmanifest")
    assert manifest.status == 200
    assert manifest.headers["Content-Type"].startswith("application/manifest+json")
    doc = await manifest.json(content_type=None)
    assert doc["start_url"] == "/" and doc["display"] == "standalone"
    for icon in doc["icons"]:
        found = await web.get(icon["src"])
        assert found.status == 200, icon
        body = await found.read()
        if icon["type"] == "image/png":
            assert body.startswith(b"\x89PNG")
            width = int.from_bytes(body[16:20], "big")
            assert icon["sizes"] == f"{width}x{width}"
    index = await (await web.get("/")).text()
    assert 'rel="manifest" href="/manifest.webmanifest"' in index


async def test_the_strings_name_the_languages_the_menu_offers(web):
    found = await (await web.get("/strings?lang=es")).json()
    assert found["locale"] == "es"
    assert [lang["code"] for lang in found["languages"]] == ["en", "pt_BR", "es", "vi"]
    assert found["strings"]["📝 Changes"] == "📝 Cambios"


async def test_an_upload_is_bounded_in_all_and_nothing_of_it_is_kept_past_the_bound(web):
    # (each file under the one-file limit; together over what one upload may carry)
    from aipager.web.routes import UPLOAD_TOTAL

    web.port.add_session(S, State.READY)
    await web.sign_in()
    half = UPLOAD_TOTAL // 2 + 1
    refused = await _upload(web, _form(("a.bin", b"a" * half), ("b.bin", b"b" * half)))
    assert refused.status == 409
    assert (await refused.json())["message"] == (
        f"📎 These files come to more than {UPLOAD_TOTAL >> 20} MB together: send fewer at once.")
    assert not os.path.exists(files.inbox_dir(web.port.env, OWNER_ID))
