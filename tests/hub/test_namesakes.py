"""Two hosts, one session name (issue 34): the chat names the host wherever the bare name
would be ambiguous, and ``/h1`` says which machines have one instead of "Unknown command"."""

from __future__ import annotations

from fakes.telegram_api import OWNER
from hub.conftest import hub_sees

from bot.conftest import eventually


async def _two_h1(machines):
    hub = machines.start_hub()
    box = machines.start_host("box")
    vm = machines.start_host("vm")
    box.start("h1")
    vm.start("h1")
    await hub_sees(hub, "claude-h1@box")
    await hub_sees(hub, "claude-h1@vm")
    return hub, box, vm


async def test_permission_requests_of_namesakes_name_their_host(machines):
    hub, box, vm = await _two_h1(machines)
    for host, command in ((box, "make deploy-box"), (vm, "make deploy-vm")):
        host.feed("claude-h1", "UserPromptSubmit", prompt="go", prompt_id="p1")
        host.feed("claude-h1", "PermissionRequest", tool_name="Bash", tool_use_id="t9",
                  tool_input={"command": command})
    for host, command in (("box", "make deploy-box"), ("vm", "make deploy-vm")):
        req = await machines.fake.wait_for("sendMessage",
                                           lambda p, c=command: c in str(p.get("text")))
        assert f"h1@{host}" in req["text"], req["text"]

    def cards():
        return [str(m.get("text", "")) for m in machines.fake.bot_messages(OWNER["id"])
                if "working" in str(m.get("text", "")) or "waiting" in str(m.get("text", ""))]

    shown = await eventually(lambda: [t for t in cards() if "h1" in t] or None, 10, "cards")
    assert all("h1@" in t for t in shown), shown


async def test_slash_name_of_namesakes_names_both_and_the_host_form_reaches_one(machines):
    hub, box, vm = await _two_h1(machines)
    msg = await machines.fake.user_says("/h1")
    reply = await machines.fake.wait_for(
        "sendMessage", lambda p: int((p.get("reply_parameters") or {}).get("message_id", 0))
        == msg["message_id"])
    assert "Unknown command" not in reply["text"]
    assert "/h1_box" in reply["text"] and "/h1_vm" in reply["text"], reply["text"]

    # with a text: a picker of the two, and the text goes where the tap says
    msg = await machines.fake.user_says("/h1 run the tests")
    picker = await machines.fake.wait_for(
        "sendMessage", lambda p: int((p.get("reply_parameters") or {}).get("message_id", 0))
        == msg["message_id"])
    buttons = [b for row in picker["reply_markup"]["inline_keyboard"] for b in row]
    assert sorted(b["text"] for b in buttons) == ["h1@box", "h1@vm"]
    shown = next(m["message_id"] for m in machines.fake.bot_messages(OWNER["id"])
                 if m.get("text") == picker["text"] and m.get("reply_markup"))
    await machines.fake.user_taps(shown, next(b for b in buttons
                                              if b["text"] == "h1@vm")["callback_data"])
    typed = await eventually(lambda: vm.sessions.typed, 30, "typed on vm")
    assert typed[0][:2] == ("claude-h1", "run the tests")

    # /h1_box: a plain command Telegram delivers in any group (no @: not another bot's)
    await machines.fake.user_says("/h1_box look at the logs")
    typed = await eventually(lambda: box.sessions.typed, 30, "typed on box")
    assert typed[0][:2] == ("claude-h1", "look at the logs")
    # /h1_vm@ourbot: the form a group in privacy mode always delivers (a command named for
    # this bot; ``/h1@vm`` would read as a command for a bot called vm)
    await machines.fake.user_says("/h1_vm@aipager_test_bot and the lint")
    typed = await eventually(lambda: vm.sessions.typed[1:], 30, "typed on vm again")
    assert typed[0][:2] == ("claude-h1", "and the lint")

    # /help tells the form
    await machines.fake.user_says("/help")
    helped = await machines.fake.wait_for("sendMessage", lambda p: "aipager —" in str(p.get("text")))
    assert "/NAME_HOST" in helped["text"] and ("/h1_box" in helped["text"]
                                               or "/h1_vm" in helped["text"])


def test_relabel_names_the_host_in_the_first_line_only():
    from aipager.hub.relabel import relabel

    assert relabel("🔐 h1 · Bash\nh1 · x", "h1@box") == "🔐 h1@box · Bash\nh1 · x"
    assert relabel("⚠️ h1 · API error", "h1@vm") == "⚠️ h1@vm · API error"
    assert relabel("h1\nthe answer", "h1@vm") == "h1@vm\nthe answer"
    assert relabel("🔐 h10 · Bash", "h1@box") == "🔐 h10 · Bash"
    assert relabel("🔐 h1 · Bash", "h1") == "🔐 h1 · Bash"
