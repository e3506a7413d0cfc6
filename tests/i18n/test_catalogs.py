"""The catalogs: complete, faithful to their placeholders, within Telegram's limits, and in
step with the code (an untranslated text cannot slip in)."""

from __future__ import annotations

import os
import runpy
import string

import pytest
from babel.messages.pofile import read_po

from aipager import locales
from aipager.chatcommands import COMMANDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = runpy.run_path(os.path.join(ROOT, "scripts", "i18n.py"))
TRANSLATED = [loc for loc in locales.LOCALES if loc != locales.DEFAULT]

#: what a placeholder may become in the chat: long, realistic values
LONG = {
    "session": "backend-refactor-2@build-server-eu", "name": "quarterly-report-final-v3.pdf",
    "reason": "the policy forbids writing outside the project folder (rule no-home-writes)",
    "error": "cannot create session backend-refactor-2: dtach exited with status 1",
    "folder": "/home/someone/projects/a-rather-long-project-name/services/api",
    "model": "claude-sonnet-4-5-20250929", "who": "@a_rather_long_username_here",
    "time": "23:59", "sessions": "alpha, backend-refactor-2, docs, frontend, infra-migration",
    "rule": "Bash(npm run test:*), Bash(make lint:*), folder /home/someone/projects/api",
    "reasons": "/home/someone/secret.key: outside the project; /etc/shadow: unreadable",
    "n": "1.000.000", "percent": "100", "text": "x" * 3500 + "… (+1,234 characters, all sent)",
    "question": "Which database should the new service use for its event log?"[:80],
    "choices": "Review hooks / Trust all and continue / Continue without trusting (hooks…)",
    "minutes": "12", "seconds": "59", "limit": "5 minutes", "variable": "AIPAGER_VOICE_MODEL",
    "key": "voice_model", "tool": "mcp__github__create_pull_request",
    "message": "backend-worker-2 needs permission for mcp__github__create_pull_request",
    "scope": "📁 Allow /home/someone/projects/a-rather-…/services/api · this project, for you",
    "problem": "the chat state was damaged (not valid JSON (line 1)); kept "
    "as /home/someone/.local/state/aipager/chat.json.damaged-20261204T194500Z; starting with a "
    "fresh one", "first": "now", "size": "123,4", "label": "alice_w",
    "role": "read_only", "id": "123456789012", "rights": "send prompts, answer requests, manage "
    "sessions", "what": "another member", "code": "a1b2c3d4", "author": "@a_rather_long_username",
    "style": "Reply in detail, with the reasoning.", "state": "off", "detail": "compact",
    "language": "Tiếng Việt", "agent": "general-purpose › Explore", "took": "1h 02m",
    "kinds": "Explore, general-purpose, Plan", "command": "npm run build -- --watch",
    "status": "session ended", "where": "aipager-hook (Bash)", "before": "92", "after": "31",
    "mode": "dontAsk", "folders": "/home/someone/projects/api, /tmp",
    "rules": "Bash(npm run test:*), Bash(make lint:*)", "tap": "🟢 Luôn cho phép",
    "host": "build-server-eu", "count": "1.000", "example": "api_build-server-eu",
    "commands": "/api_build-server-eu, /api_vm",
    "mb": "1,530", "unheard": "4 minutes", "speech": "5 minutes",
    "names": "a1b2c3-screenshot-2026-12-06.png, d4e5f6-notes.txt",
    "server": "github-enterprise-releases", "field": "Release note for the changelog",
    "value": "Nightly (every commit on main)",
    "got": "12 seconds", "length": "4 minutes", "written": "português (Brasil)",
    "heard": "tiếng Việt", "stopped": "23:59", "started": "00:01",
}
#: texts shown as a tap's toast (answerCallbackQuery: at most 200 characters)
TOASTS = {
    "This button has expired.", "Already answered.", "This request is no longer open.",
    "This one waits in the terminal now: answer it there.", "Could not answer: {reason}",
    "Allowed", "Always allowed", "Denied", "Denied and stopped",
    "This question is no longer open.", "Answered.", "Declined.",
    "That question was already answered.", "{session} is not running.",
    "{session} is not working on anything.", "Stopping…", "Messages go to {session} now.",
    "Ending {session}…", "Kept running.", "Sent to {session}.", "Saved.",
    "Cannot switch {session}: {error}", "{session}: switching to {model}",
    "Only the person who spoke can send, edit or cancel this.",
    "Your role may not send messages to Claude here.", "Only an admin may do that here.",
    "Your role may not answer Claude's requests.",
    "Only the task's author or an admin may do that.",
    "Only the task's author or an admin may answer this.",
    "🔒 This bot is private: it drives somebody's Claude Code sessions.",
    "🔒 You are not a member here: ask an admin for access.",
    "Allowed. {where}, reads in {folders} no longer ask; a change there still asks.",
    "Allowed. {where}, file edits and common file commands in the session's folders no "
    "longer ask.",
    "Allowed. {where}: {mode}.", "Allowed. {where}, Claude Code no longer asks for {rules}.",
}
#: button labels: short enough to read whole on a phone
BUTTONS = {
    "⏹ Stop", "📦 Compact now", "✅ Approve plan", "✅ Allow", "✍️ Keep planning", "❌ Deny",
    "🟢 Always allow", "✏️ Edit", "✅ Next", "✅ Submit", "✍️ Other…", "⏹ Decline", "✅ Send",
    "❌ Cancel", "📟 Open aipager", "🗑 Yes, end it", "Cancel", "💬 Reply style ›",
    "📝 Diff previews: turn off", "📝 Diff previews: turn on", "🗂 Card detail: {detail}",
    "🔕 Quiet at the computer: turn off", "🔕 Quiet at the computer: turn on", "🌐 Auto",
}
BUTTON_MAX = 40
#: the command menu's descriptions (setMyCommands: 3 to 256 characters)
DESCRIPTIONS = {words for _name, words in COMMANDS} | {"Talk to session {name}"}


def _template():
    with open(TOOL["TEMPLATE"], "rb") as fh:
        return read_po(fh)


def _catalog(locale):
    with open(TOOL["catalogs"]()[locale], "rb") as fh:
        return read_po(fh, locale=locale)


def _fields(text: str) -> set[str]:
    return {name for _lit, name, _spec, _conv in string.Formatter().parse(text) if name is not None}


def _u16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def test_every_locale_but_english_has_a_catalog():
    assert sorted(TOOL["catalogs"]()) == sorted(TRANSLATED)


def test_the_template_is_what_the_code_marks():
    """Babel's extractor, run on the code now, finds exactly the template's msgids: a text
    added to the chat without a translation fails here (``python scripts/i18n.py extract
    update`` then translate)."""
    assert TOOL["msgids"](TOOL["extract"]()) == TOOL["msgids"](_template())


@pytest.mark.parametrize("locale", TRANSLATED)
def test_every_msgid_is_translated_and_not_fuzzy(locale):
    catalog = _catalog(locale)
    assert not catalog.fuzzy, f"{locale}: the catalog's header is fuzzy"
    for msg in _template():
        if not msg.id:
            continue
        found = catalog.get(msg.id)
        assert found is not None, f"{locale}: missing {msg.id!r}"
        assert not found.fuzzy, f"{locale}: fuzzy {msg.id!r}"
        strings = found.string if isinstance(found.string, tuple) else (found.string,)
        assert len(strings) == (catalog.num_plurals if isinstance(msg.id, tuple) else 1)
        assert all(s.strip() for s in strings), f"{locale}: empty {msg.id!r}"


@pytest.mark.parametrize("locale", TRANSLATED)
def test_placeholders_match_exactly(locale):
    catalog = _catalog(locale)
    for msg in catalog:
        if not msg.id:
            continue
        ids = msg.id if isinstance(msg.id, tuple) else (msg.id,)
        strings = msg.string if isinstance(msg.string, tuple) else (msg.string,)
        wanted = _fields(ids[-1])
        assert all(_fields(i) == wanted for i in ids), ids
        for s in strings:
            assert _fields(s) == wanted, f"{locale}: {s!r} has not the fields {wanted} of {ids[0]!r}"
            s.format(**LONG)  # a stray brace would raise


@pytest.mark.parametrize("locale", TRANSLATED)
def test_emoji_are_kept(locale):
    catalog = _catalog(locale)
    for msg in catalog:
        if not msg.id or isinstance(msg.id, tuple):
            continue
        head = msg.id.split(" ", 1)[0]
        if head and not head[0].isascii() and not head[0].isalpha() and head != "…":
            assert msg.string.startswith(head), f"{locale}: {msg.string!r} lost {head}"


@pytest.mark.parametrize("locale", list(locales.LOCALES))
def test_every_text_fits_telegram_with_long_values(locale):
    catalog = _catalog(locale) if locale != locales.DEFAULT else _template()
    for msg in catalog:
        if not msg.id:
            continue
        singular = msg.id[0] if isinstance(msg.id, tuple) else msg.id
        strings = msg.string if isinstance(msg.string, tuple) else (msg.string,)
        if locale == locales.DEFAULT:
            strings = msg.id if isinstance(msg.id, tuple) else (msg.id,)
        for s in strings:
            shown = s.format(**LONG)
            assert _u16(shown) <= 4096, (locale, singular)
            if singular in TOASTS:
                assert len(shown) <= 200, (locale, shown)
            if singular in BUTTONS:
                assert len(s.format(detail="compact", **{k: v for k, v in LONG.items()
                                                          if k != "detail"})) <= BUTTON_MAX, \
                    (locale, s)
            if singular in DESCRIPTIONS:
                assert 3 <= len(s.format(name="x" * 32)) <= 256, (locale, s)


def test_the_lists_above_name_real_msgids():
    ids = {m.id if isinstance(m.id, str) else m.id[0] for m in _template() if m.id}
    assert TOASTS <= ids and BUTTONS <= ids and DESCRIPTIONS <= ids


@pytest.mark.parametrize("code, locale", [
    ("pt-br", "pt_BR"), ("pt", "pt_BR"), ("pt-PT", "pt_BR"), ("es", "es"), ("es-419", "es"),
    ("es-MX", "es"), ("vi", "vi"), ("en", "en"), ("de", "en"), ("", "en"), (None, "en"),
])
def test_telegram_language_codes_map_to_a_locale(code, locale):
    assert locales.from_telegram(code) == locale
