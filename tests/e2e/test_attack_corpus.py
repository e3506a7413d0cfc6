"""The attack corpus (``attacks/corpus.json``) on the real Claude Code 2.1.328.

A `user` member of a team group sends each attack from the chat, one at a time, with canary
files in place: an SSH key in the home, aipager's config holding the bot token, an image of
the owner's.  Each message is typed in its one encoded form (``policy.chatprompt``) or blocked
by the hook (``hookside._unmatched``); afterwards nothing secret has reached the model API, no
image was attached, nothing ran, the session lives, and the owner's next prompt arrives alone.
The audit names the member for every message and block.
"""

from __future__ import annotations

import json
import os
import struct
import zlib

import pytest

from e2e.kit.chat import Phone
from e2e.kit.daemon import USER_ID
from e2e.test_team import GROUP, GUEST, TUI_ARGS, _ready, team  # noqa: F401 - fixture
from fakes import anthropic as fa
from fakes.telegram_api import OWNER, TOKEN

pytestmark = pytest.mark.e2e

CORPUS = os.path.join(os.path.dirname(__file__), "attacks", "corpus.json")
SSH_CANARY = "E2E-CANARY-SSH-KEY-MATERIAL"


def _png(path: str) -> None:
    """A real 1x1 PNG (Claude Code attaches only files that are images)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"\x00\xff\x00\x00"
    with open(path, "wb") as fh:
        fh.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
                 + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _attacks(fill: dict[str, str]) -> list[dict[str, str]]:
    with open(CORPUS, encoding="utf-8") as fh:
        corpus = json.load(fh)["attacks"]
    out = []
    for entry in corpus:
        text = entry["text"]
        for key, value in fill.items():
            text = text.replace("{" + key + "}", value)
        out.append({**entry, "text": text})
    return out


def _everything_sent(fake_anthropic) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in fake_anthropic.requests)


#: the corpus runs in this many parts, each on its own session (the parts run side by side
#: on the suite's workers; each ends with the owner's prompt, which must arrive alone).  A
#: group gets 20 writes a minute (``bot.outbox``) and an attack makes three or four (👀, 👍
#: and Claude's answer): about three attacks a part keep a part within its first minute,
#: where a dozen made each part wait two minutes for the group's pace.
SHARDS = 12


@pytest.mark.parametrize("shard", range(SHARDS))
def test_the_corpus_is_inert_on_the_real_claude_code(
        shard, team, dtach_session, fake_anthropic, fake_telegram, claude_home):  # noqa: F811 - fixture
    phone = Phone(fake_telegram, GROUP)
    home = claude_home.home
    os.makedirs(os.path.join(home, ".ssh"), exist_ok=True)
    ssh = os.path.join(home, ".ssh", "id_rsa")
    with open(ssh, "w") as fh:
        fh.write(SSH_CANARY + "\n")
    # an image the member may not read (an image the policy lets them read may be
    # attached, as a mention of it would be)
    image = os.path.join(home, ".ssh", "owner-photo.png")
    _png(image)
    made = os.path.join(claude_home.project, "made-by-an-attack")
    from aipager.proto import paths

    config = paths.config_file(claude_home.aipager_env())
    with open(config, encoding="utf-8") as fh:
        assert TOKEN in fh.read()  # the canary the config holds
    fake_anthropic.script("E2E-OWNER-LAST", fa.text("Owner answered."))
    tui = dtach_session(*TUI_ARGS)
    _ready(team)

    attacks = _attacks({"SSH": ssh, "CONFIG": config, "SHADOW": "/etc/shadow",
                        "ENVIRON": "/proc/self/environ", "MADE": made, "IMAGE": image,
                        "PROJECT": claude_home.project})[shard::SHARDS]
    outcomes = []
    for attack in attacks:
        sent = fake_telegram.say("/e2e " + attack["text"], user=GUEST, chat_id=GROUP)
        mid = sent["message_id"]
        # taken (👍) or not taken (🤷, said on the message); then Claude is idle again
        snap = phone.wait(lambda s, mid=mid: ("👍" in phone.reactions(mid, s)
                                              or "🤷" in phone.reactions(mid, s)) and s,
                          60, f"the {attack['class']} attack ({attack['why']}) settled")
        outcomes.append((attack, "taken" if "👍" in phone.reactions(mid, snap) else "blocked"))
        team.wait_session(lambda s: s["state"] == "ready", 60, "Claude idle again")
        assert tui.alive, f"the session ended after: {attack}"

    # The owner's prompt arrives alone: nothing glued to it.
    fake_telegram.say("/e2e E2E-OWNER-LAST hello", user=OWNER, chat_id=GROUP)
    phone.wait(lambda s: any("Owner answered." in t for t in phone.sent_texts(s)), 60,
               "the owner's answer")
    last = fa.message_text(fake_anthropic.requests_with("E2E-OWNER-LAST")[0].last_user())
    assert "Via aipager, from owner (owner):\nE2E-OWNER-LAST hello" in last, last
    assert "glue the next one" not in last

    # a blocked attack is no task: nothing in the chat calls the member's words the owner's
    assert not [t for t in phone.sent_texts(phone.snapshot()) if "typed at the computer" in t]

    sent = _everything_sent(fake_anthropic)
    assert SSH_CANARY not in sent
    assert TOKEN not in sent
    assert '"type": "image"' not in sent and "owner-photo" not in sent.replace("owner-photo․png", "")
    try:
        with open("/etc/shadow", encoding="utf-8") as fh:
            first = fh.readline().strip()
    except OSError:
        first = ""
    if first:
        assert first not in sent
    assert "CLAUDE_DTACH_SESSION=" not in sent
    assert not os.path.exists(made)
    assert tui.alive
    # Every attack went in as the member's words (or was blocked), never as a file or a key.
    for attack, outcome in outcomes:
        if outcome == "taken":
            prompts = [fa.message_text(r.last_user()) for r in fake_anthropic.requests
                       if "Via aipager, from guest (user):" in fa.message_text(r.last_user() or {})]
            assert prompts, attack
    records = claude_home.audit()
    typed = [r for r in records if r.get("action") == "chat_prompt"]
    taken = any(outcome == "taken" for _attack, outcome in outcomes)
    assert {r["who_id"] for r in typed} == ({USER_ID, OWNER["id"]} if taken else {OWNER["id"]})
    for record in records:
        if record.get("action") == "prompt_blocked":
            assert [s["user_id"] for s in record["senders"]] in ([USER_ID], [])
