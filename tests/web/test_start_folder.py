"""Starting a session from the page asks for its folder (the ones Claude Code trusts first),
and Claude Code's folder trust dialog is shown there, answerable, while no prompt is typed
into it (a prompt's keys would answer the dialog: its Enter pressed "No, exit")."""

from __future__ import annotations

import json

from support.screens import rows

from aipager.daemon import screen
from aipager.port.model import State
from aipager import folders

S = "claude-jim"


def _claude_trusts(web, tmp_path, *trusted: str, untrusted: str = "") -> None:
    """Claude Code's own config, as it writes it, in ``$CLAUDE_CONFIG_DIR``."""
    projects = {f: {"hasTrustDialogAccepted": True, "allowedTools": []} for f in trusted}
    if untrusted:
        projects[untrusted] = {"hasTrustDialogAccepted": False}
    home = tmp_path / "claude-home"
    home.mkdir(exist_ok=True)
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3, "projects": projects}))
    web.port.env["CLAUDE_CONFIG_DIR"] = str(home)


def test_trust_is_claude_codes_accepted_dialog_and_covers_the_folders_under_it():
    config = {"projects": {"/srv/app": {"hasTrustDialogAccepted": True},
                           "/srv/other": {"hasTrustDialogAccepted": False},
                           "relative": {"hasTrustDialogAccepted": True}, "/x": "junk"}}
    found = folders.trusted(config)
    assert found == ["/srv/app"]
    assert folders.is_trusted("/srv/app/web", found) and folders.is_trusted("/srv/app/", found)
    assert not folders.is_trusted("/srv/application", found)
    assert not folders.is_trusted("/srv/other", found)
    assert folders.trusted({"projects": []}) == [] and folders.trusted(None) == []


async def test_the_page_offers_the_trusted_folders_first_and_starts_where_asked(web, tmp_path):
    app, gone = tmp_path / "app", tmp_path / "gone"
    app.mkdir()
    _claude_trusts(web, tmp_path, str(app), str(gone))
    await web.sign_in()
    found = await (await web.get("/api/folders")).json()
    assert found["trusted"] == [str(app)]  # a folder no longer there is not offered
    assert found["default"]
    started = await (await web.post("/api/sessions", {"name": "new1", "folder": str(app)})).json()
    assert started["ok"] and str(app) in started["message"]
    ((name,), kw), = web.port.calls("start_session")
    assert (name, kw["cwd"]) == ("new1", str(app))
    missing = await web.post("/api/sessions", {"name": "new2", "folder": str(gone)})
    assert missing.status == 409 and len(web.port.calls("start_session")) == 1


async def test_the_trust_dialog_needs_the_person_and_holds_off_prompts(web, tmp_path):
    trusted, fresh = tmp_path / "app", tmp_path / "fresh"
    trusted.mkdir()
    fresh.mkdir()
    _claude_trusts(web, tmp_path, str(trusted), untrusted=str(fresh))
    await web.sign_in()
    web.port.add_session(S, State.UNKNOWN)  # started, no hook yet: at the dialog
    web.port.sessions.get(S).cwd = str(fresh)
    on_screen = {"seen": screen.read(rows("trust"))}  # what its terminal shows
    web.port.handler = lambda call, args, kw: (
        on_screen["seen"] if call == "screen" else True if call == "answer_dialog" else None)
    (need,) = (await (await web.get("/api/state")).json())["needs"]
    assert (need["kind"], need["session"], need["cwd"]) == ("trust", S, str(fresh))
    assert [a["act"] for a in need["answers"]] == ["yes", "no"]
    # the session's own view shows it too, with its buttons
    own = await (await web.get(f"/api/sessions/{S}")).json()
    assert [n["kind"] for n in own["needs"]] == ["trust"]

    refused = await web.post(f"/api/sessions/{S}/prompt", {"text": "hello"})
    assert refused.status == 409 and "trust its folder" in (await refused.json())["message"]
    assert web.port.calls("type_prompt") == [] and web.port.calls("type_text") == []

    ok = await (await web.post(f"/api/sessions/{S}/trust", {"act": "yes"})).json()
    assert ok["ok"] and web.port.calls("type_text") == []
    # the choice is found on the dialog the screen shows, by its words ("No, exit" is first)
    ((session, kind, pick), _), = web.port.calls("answer_dialog")
    assert (session, kind) == (S, screen.Kind.TRUST)
    assert pick(screen.read(rows("trust"))) == 1
    (audited,) = [c for c in web.port.calls("audit_action") if c[0][0] == "folder_trusted"]
    assert audited[1]["folder"] == str(fresh)

    # once it started (its first hook), nothing asks and prompts go in
    on_screen["seen"] = screen.read(rows("idle"))
    web.port.sessions.get(S).claude_session_id = "abc"
    web.port.add_session(S, State.READY)
    assert (await (await web.get("/api/state")).json())["needs"] == []
    sent = await web.post(f"/api/sessions/{S}/prompt", {"text": "hello"})
    assert sent.status == 200 and len(web.port.calls("type_prompt")) == 1


async def test_a_session_in_a_trusted_folder_is_not_asked_about(web, tmp_path):
    app = tmp_path / "app"
    (app / "web").mkdir(parents=True)
    _claude_trusts(web, tmp_path, str(app))
    await web.sign_in()
    web.port.add_session(S, State.UNKNOWN)
    web.port.sessions.get(S).cwd = str(app / "web")
    assert (await (await web.get("/api/state")).json())["needs"] == []
    no = await web.post(f"/api/sessions/{S}/trust", {"act": "yes"})
    assert no.status == 409 and web.port.calls("type_text") == []


async def test_the_page_starts_a_session_in_the_permission_mode_chosen(web, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    _claude_trusts(web, tmp_path, str(app))
    await web.sign_in()
    found = await (await web.get("/api/folders")).json()
    assert [m["value"] for m in found["modes"]] == ["", "default", "acceptEdits", "plan"]
    assert found["modes"][3]["label"].startswith("🗺 Plan")
    started = await (await web.post("/api/sessions", {"name": "p1", "folder": str(app),
                                                      "mode": "plan"})).json()
    assert started["ok"]
    plain = await (await web.post("/api/sessions", {"name": "p2", "folder": str(app)})).json()
    assert plain["ok"]
    (first, second) = web.port.calls("start_session")
    assert first[1]["mode"] == "plan" and "mode" not in second[1]
    # a mode the page does not offer is refused, and nothing starts
    bypass = await web.post("/api/sessions", {"name": "p3", "mode": "bypassPermissions"})
    assert bypass.status == 409
    assert (await bypass.json())["message"] == "There is no permission mode bypassPermissions."
    assert len(web.port.calls("start_session")) == 2


async def test_the_page_starts_the_agent_chosen(web, tmp_path):
    """The start form offers the agents (saying which this computer lacks) and starts the
    one chosen; an agent aipager does not know is refused and nothing starts."""
    codex = tmp_path / "codex"
    codex.write_text("#!/bin/sh\n")
    codex.chmod(0o755)
    await web.sign_in()
    web.port.env["PATH"] = "/nonexistent"
    web.port.env.pop("AIPAGER_CODEX_BIN", None)
    found = await (await web.get("/api/folders")).json()
    assert found["agents"] == [{"value": "claude", "label": "Claude Code (not installed on the "
                                                             "computer)"},
                               {"value": "codex", "label": "Codex (not installed on the "
                                                           "computer)"}]
    web.port.env["AIPAGER_CODEX_BIN"] = str(codex)
    found = await (await web.get("/api/folders")).json()
    assert found["agents"][1] == {"value": "codex", "label": "Codex"}
    started = await (await web.post("/api/sessions", {"name": "cx", "agent": "codex"})).json()
    assert started["ok"]
    claude = await (await web.post("/api/sessions", {"name": "cc", "agent": "claude"})).json()
    assert claude["ok"]
    (cx, cc) = web.port.calls("start_session")
    assert cx[1]["agent"] == "codex" and "agent" not in cc[1]
    cursor = await web.post("/api/sessions", {"name": "cu", "agent": "cursor"})
    assert cursor.status == 409
    assert (await cursor.json())["message"] == "There is no coding agent cursor here."
    assert len(web.port.calls("start_session")) == 2


async def test_codexs_trust_dialog_seen_on_its_screen_is_asked_on_the_page(web, tmp_path):
    """A Codex session whose screen showed its folder trust dialog (``read_start``) is asked
    about on the page, in Codex's name; once it started, nothing asks."""
    await web.sign_in()
    web.port.add_session(S, State.UNKNOWN)
    sess = web.port.sessions.get(S)
    sess.cwd, sess.coding_agent, sess.start_dialog = str(tmp_path), "codex", "trust"
    (need,) = (await (await web.get("/api/state")).json())["needs"]
    assert need["kind"] == "trust" and need["text"].startswith(
        f"📁 jim · Codex asks whether you trust the files in {tmp_path}.")
    sess.start_dialog = ""  # its input line showed: started
    web.port.add_session(S, State.READY)
    assert (await (await web.get("/api/state")).json())["needs"] == []
