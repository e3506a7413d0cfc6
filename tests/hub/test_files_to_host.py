"""A photo or document from the phone for a session on another host lands on that host's
disk (sent in pieces through the real nats-server), and the prompt typed there names the
host's copy, never the hub's."""

from __future__ import annotations

import os
import stat

import pytest
from bot.conftest import eventually
from fakes.telegram_api import OWNER
from hub.conftest import HUB_PW, hub_sees

from aipager.proto import paths
from aipager.hub import codec, names, transfer
from aipager.hub.conn import connect
from aipager.hub.creds import Creds


async def test_a_document_for_a_host_session_is_written_on_the_host(machines, monkeypatch):
    monkeypatch.setattr(transfer, "SLOW_LINK", 64 * 1024)  # a file's time: clearly seen
    hub = machines.start_hub()
    box = machines.start_host("box")
    session = box.start("jim")
    await hub_sees(hub, "claude-jim@box")

    # three pieces and a bit: the pieces arrive in order and make the file whole
    data = bytes(range(256)) * (transfer.CHUNK * 3 // 256) + b"tail"
    await machines.fake.user_sends_document(data, "build log.txt", caption="/jim why did it fail")
    typed = await eventually(lambda: box.sessions.typed, 15, "the prompt typed on box")
    assert typed[0][0] == session
    text = typed[0][1]
    # the sender's own folder on the host too, as on the hub
    folder = transfer.incoming_dir(box.env, f"u{OWNER['id']}")
    assert folder == paths.uploads_dir(box.env, OWNER["id"])
    assert text.startswith(f"why did it fail {folder}/")
    here = text.removeprefix("why did it fail ")
    assert here.endswith("-build log.txt")
    with open(here, "rb") as fh:
        assert fh.read() == data
    assert stat.S_IMODE(os.stat(here).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert paths.files_dir(machines.hub_env) not in text  # the hub's path never reaches box
    assert [e for e in os.listdir(folder) if e.endswith(".part")] == []
    assert hub.sessions.typed == []

    # on the broker: four pieces, then the message queued and typed (naming the file by its
    # id, once), each given time for the file on a slow link
    nc = await connect(machines.broker.url, Creds("hub", HUB_PW))
    try:
        js = nc.jetstream()
        info = await js.stream_info(names.CMD_STREAM)
        sent = [codec.loads((await js.get_msg(names.CMD_STREAM, seq)).data)
                for seq in range(info.state.first_seq, info.state.last_seq + 1)]
    finally:
        await nc.close()
    kinds = [doc["cmd"]["name"] for doc in sent]
    # (the prompt itself: one use case the host's own service decides)
    assert kinds == ["put_file"] * 4 + ["ask"], kinds
    assert sent[-1]["cmd"]["command"]["record"] == "SendPrompt"
    assert {doc["cmd"]["person"] for doc in sent[:4]} == {f"u{OWNER['id']}"}
    given = hub.link.timeout + transfer.time_for(len(data))
    assert given > hub.link.timeout + 10
    assert [doc["ttl"] for doc in sent[:4]] == [given] * 4
    # (the message after the pieces, however it goes: the time the file still needs)
    assert all(hub.link.timeout + 5 < doc["ttl"] <= given for doc in sent[4:]), sent[4:]
    assert sent[-1]["cmd"]["files"] == {
        path: sent[0]["cmd"]["file_id"] for path in sent[-1]["cmd"]["files"]}
    assert len(sent[-1]["cmd"]["files"]) == 1


async def test_a_photo_too_big_to_travel_is_refused_in_words(machines, monkeypatch):
    hub = machines.start_hub()
    box = machines.start_host("box")
    box.start("jim")
    await hub_sees(hub, "claude-jim@box")
    monkeypatch.setattr(transfer, "MAX_FILE", 1000)  # (Telegram's 20 MB, made small)
    await machines.fake.user_sends_photo(b"\xff\xd8" + b"x" * 2000, caption="/jim look")
    reply = await machines.fake.wait_for("sendMessage",
                                         lambda p: "Not delivered" in str(p.get("text")))
    assert "travel to another machine" in reply["text"]
    assert box.sessions.typed == []


def test_a_piece_out_of_order_or_a_missing_file_is_an_error(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    fid = "0123456789abcdef0123"
    with pytest.raises(ValueError, match="did not arrive on this machine"):
        transfer.rewrite(env, "see /hub/in/chat-1/a.txt", {"/hub/in/chat-1/a.txt": fid})
    transfer.put(env, fid, "a.txt", 0, 3, "aGVsbG8=")
    with pytest.raises(ValueError, match="out of order"):
        transfer.put(env, fid, "a.txt", 2, 3, "aGVsbG8=")
    with pytest.raises(ValueError, match="does not fit"):
        transfer.put(env, "../../etc", "a.txt", 0, 1, "aGVsbG8=")
    transfer.put(env, fid, "../../.bashrc", 0, 1, "aGVsbG8=")
    (kept,) = os.listdir(transfer.incoming_dir(env))
    assert kept == f"{fid}-bashrc"
    assert transfer.rewrite(env, "see /hub/in/chat-1/a.txt now",
                            {"/hub/in/chat-1/a.txt": fid}) == \
        f"see {transfer.incoming_dir(env)}/{fid}-bashrc now"


async def test_a_file_prompt_on_a_host_is_the_phones_not_typed_at_the_computer(machines):
    """Issue 34: the host renames the file to its own copy before typing; the note and the
    prompt Claude Code submits are that final text, so the chat shows the phone's prompt
    on the card and no "typed at the computer" echo."""
    from fakes.telegram_api import OWNER

    hub = machines.start_hub()
    box = machines.start_host("box")
    session = box.start("jim")
    await hub_sees(hub, "claude-jim@box")
    # its session may show (an output) before its first snapshot says the host is online
    await eventually(lambda: any(h.name == "box" and h.online for h in hub.port.hosts()), 15,
                     "box online")
    msg = await machines.fake.user_sends_document(b"log line\n", "run.log",
                                                  caption="/jim what failed")
    await eventually(lambda: box.sessions.pasted, 15, "typed on box")
    (_, submitted), = box.sessions.pasted
    note = box.sessions.typed[0][2]
    assert note["text"] == submitted  # the note holds the final text, the host's path in it
    here = box.sessions.typed[0][1].removeprefix("what failed ")
    assert here.startswith(paths.files_dir(box.env))  # the host's own copy
    box.feed(session, "queue_pickup", consumed=[{"msg_id": msg["message_id"],
                                                "chat_id": OWNER["id"],
                                                "author_user_id": OWNER["id"]}])
    box.feed(session, "UserPromptSubmit", prompt=submitted, prompt_id="p1")
    box.feed(session, "PreToolUse", tool_name="Read", tool_use_id="t1",
             tool_input={"file_path": here})
    await eventually(lambda: [m for m in machines.fake.bot_messages(OWNER["id"])
                              if "jim · working" in str(m.get("text"))], 10, "the card")
    task = box.daemon.core.registry.get(session).task
    assert task.origin == "telegram" and task.prompt == f"what failed {here}"
    box.feed(session, "Stop", prompt_id="p1", last_assistant_message="The disk was full.")
    await machines.fake.wait_for("sendMessage", lambda p: "disk was full" in str(p.get("text")))
    texts = [str(m.get("text")) for m in machines.fake.bot_messages(OWNER["id"])]
    assert not [t for t in texts if "typed at the computer" in t], texts


def test_a_file_in_a_persons_folder_lands_in_that_persons_folder_on_the_host(tmp_path):
    """The host's copy goes where the hub's lies (the person's folder, named by the hub's
    path, never by who names it in a prompt): the floor opens it to that person's tasks
    alone.  A file in no person's folder goes to from-hub, which only the owner's read."""
    env = {"HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    hub = "/srv/hub/aipager/files/in"
    ann, old = f"{hub}/u7/a1b2c3-photo.jpg", f"{hub}/chat--100/a1b2c3-photo.jpg"
    assert (transfer.person_of(ann), transfer.person_of(old)) == ("u7", "")
    assert transfer.person_of(f"{hub}/u7/../u0/x") == ""
    fid, other = "0123456789abcdef0123", "3210fedcba9876543210"
    transfer.put(env, fid, "photo.jpg", 0, 1, "aGVsbG8=", transfer.person_of(ann))
    transfer.put(env, other, "photo.jpg", 0, 1, "aGVsbG8=", transfer.person_of(old))
    text = transfer.rewrite(env, f"look {ann} and {old}", {ann: fid, old: other})
    assert text == (f"look {paths.uploads_dir(env, 7)}/{fid}-photo.jpg and "
                    f"{transfer.incoming_dir(env)}/{other}-photo.jpg")
    with pytest.raises(ValueError, match="no person"):
        transfer.put(env, fid, "photo.jpg", 0, 1, "aGVsbG8=", "../from-hub")


def test_only_plainly_spelled_files_of_the_inbox_travel(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    inbox = transfer.hub_inbox(env)
    os.makedirs(inbox + "u7")
    with open(inbox + "u7/a.txt", "w") as fh:
        fh.write("x")
    secret = tmp_path / "secret.txt"
    secret.write_text("s")
    sneaky = f"{inbox}u7/../../../../../secret.txt"
    assert os.path.isfile(sneaky)
    assert transfer.inbox_paths(env, f"see {inbox}u7/a.txt and {sneaky}") == [inbox + "u7/a.txt"]
