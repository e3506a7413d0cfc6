"""A permission request on the page is the chat's: the same words, answers and diff
(``clients.asking``), so the two cannot drift."""

from __future__ import annotations

from aipager.clients import asking
from aipager.daemon import diffs
from aipager.daemon.events.tools import diff_preview
from aipager.port.model import Request, State
from aipager.port.outputs import Permission

S = "claude-jim"
KEY = "p:t1:"


def _write_over(path, old: str, new: str) -> Permission:
    """The Permission the daemon emits for a Write over an existing file: the preview of
    the new content (every line ``+``) and the real diff against the file on disk."""
    path.write_text(old)
    tool_input = {"file_path": str(path), "content": new}
    return Permission(session=S, text=f"🔐 jim · Write\n{path}", key=KEY, tool="Write",
                      detail=str(path), buttons=["allow", "deny", "stop"],
                      preview=diff_preview("Write", tool_input),
                      diff=diffs.unified("Write", tool_input, "/", diffs.read_text))


async def test_a_write_over_an_existing_file_shows_the_real_diff_as_the_chat(web, tmp_path):
    await web.sign_in()
    web.port.add_session(S, State.WAITING)
    web.port.sessions.get(S).requests.append(
        Request(key=KEY, kind="permission", tool="Write", opened_at=1.0))
    out = _write_over(tmp_path / "notes.txt", "one\ntwo\nthree\n", "one\nTWO\nthree\n")
    web.live.emit(out)
    (need,) = (await (await web.get("/api/state")).json())["needs"]
    lines = need["change"]["shown"].splitlines()
    assert "-two" in lines and "+TWO" in lines and " one" in lines  # context, not "+ one"
    assert not [line for line in lines if line.startswith("+ ")]  # not the preview's lines
    assert need["change"]["real"] is True and need["change"]["more"] == 0
    assert need["change"]["shown"] == asking.change(out).shown  # what the chat shows


async def test_a_long_diff_comes_as_its_head_and_the_whole(web, tmp_path):
    await web.sign_in()
    web.port.add_session(S, State.WAITING)
    web.port.sessions.get(S).requests.append(
        Request(key=KEY, kind="permission", tool="Write", opened_at=1.0))
    out = _write_over(tmp_path / "big.txt", "", "".join(f"row {i}\n" for i in range(400)))
    web.live.emit(out)
    (need,) = (await (await web.get("/api/state")).json())["needs"]
    change = need["change"]
    assert change["more"] > 0 and len(change["shown"]) <= asking.DIFF_SHOWN
    assert change["whole"] == out.diff and "+row 399" in change["whole"]


async def test_the_page_offers_the_chats_answers_and_says_what_always_remembers(web):
    """Always allow and the per-suggestion answers, in the chat's order, with the rule
    the chat names under the request."""
    await web.sign_in()
    web.port.add_session(S, State.WAITING)
    rule = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "make:*"}],
            "destination": "localSettings"}
    web.port.sessions.get(S).requests.append(
        Request(key=KEY, kind="permission", tool="Bash", opened_at=1.0, detail="make test",
                suggestions=[rule]))
    web.live.emit(Permission(session=S, text="🔐 jim · Bash\nmake test", key=KEY, tool="Bash",
                             detail="make test", buttons=["allow", "deny", "stop", "always", "s0"],
                             scopes=["🟢 Allow make:* · always"]))
    (need,) = (await (await web.get("/api/state")).json())["needs"]
    assert [a["act"] for a in need["answers"]] == ["allow", "deny", "s0", "always", "stop"]
    assert need["text"].endswith("🟢 Always allow remembers: Bash(make:*)")


async def test_who_answered_a_request_stays_in_the_conversation_in_the_readers_language(web):
    """Answered, a request leaves the page's list of what waits, and the conversation keeps
    the chat's verdict line (``asking.verdict``): who, how and when, in each reader's
    language; a key answered twice (its keys, then its tool ran) is said once."""
    import time

    from aipager.port.outputs import RequestAnswered, RequestClosed

    await web.sign_in()
    web.port.add_session(S, State.WAITING)
    web.live.emit(Permission(session=S, text="🔐 jim · Bash\nmake deploy", key=KEY, tool="Bash",
                             detail="make deploy", buttons=["allow", "deny", "stop"]))
    web.live.emit(RequestAnswered(session=S, key=KEY, via="keys", answer="allow", who="@ana"))
    web.live.emit(RequestClosed(session=S, key=KEY, via="keys", answer="allow", who="@ana"))
    when = time.strftime("%H:%M")
    english = (await (await web.get(f"/api/sessions/{S}")).json())["conversation"]
    said = [e for e in english if e["kind"] == "verdict"]
    assert [e["text"] for e in said] == [f"jim · Bash\n✅ Allowed by @ana · {when}"]
    assert "verdict" not in said[0]  # (what it is made of stays on the server)
    portuguese = (await (await web.get(f"/api/sessions/{S}", **{"X-Aipager-Lang": "pt-BR"}))
                  .json())["conversation"]
    assert [e["text"] for e in portuguese if e["kind"] == "verdict"] == [
        f"jim · Bash\n✅ Permitido por @ana · {when}"]
    assert (await (await web.get("/api/state")).json())["needs"] == []


async def test_an_edited_allow_says_in_the_conversation_who_edited_it_and_what_ran(web):
    """✏️ Edit then allow: the conversation's verdict names the path the call ran with (not
    the one Claude asked for, which its head still names) and who edited it."""
    import time

    from aipager.port.outputs import RequestClosed

    await web.sign_in()
    web.port.add_session(S, State.WAITING)
    web.live.emit(Permission(session=S, text="🔐 jim · Write\n/srv/app/asked.txt", key=KEY,
                             tool="Write", detail="/srv/app/asked.txt",
                             buttons=["allow", "deny", "stop", "edit"]))
    web.live.emit(RequestClosed(session=S, key=KEY, via="hook_decision", answer="allow",
                                who="@ana", edited="/srv/other/edited.txt"))
    when = time.strftime("%H:%M")
    talk = (await (await web.get(f"/api/sessions/{S}")).json())["conversation"]
    assert [e["text"] for e in talk if e["kind"] == "verdict"] == [
        f"jim · Write\n✏️ Edited by @ana · {when}, and allowed with this instead:\n"
        "/srv/other/edited.txt"]
