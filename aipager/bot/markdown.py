"""Claude's Markdown answers as Telegram messages: plain text plus MessageEntity lists.

Telegram formats a message from ``entities`` whose offsets and lengths count UTF-16
code units, and caps a message at 4096 of them. Sending entities instead of
MarkdownV2 means nothing in Claude's text needs escaping and nothing it writes can
make the Bot API refuse the message with "can't parse entities".

telegramify-markdown does the Markdown → (text, entities) conversion; this module
adds what a chat bridge needs around it: cleaning input the way Telegram would,
keeping HTML-looking text visible, dropping entities Telegram would reject, and
splitting at readable places so that no entity crosses a message boundary.
Everything here is a pure function of its arguments.  The converter and its parser (~2 MB
of the daemon's memory) are imported with the first answer, not while the daemon idles.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from typing import Any, NamedTuple

from aiogram.types import MessageEntity

from aipager.bot.i18n import N_, _

#: Telegram's cap on one message, in UTF-16 code units
TELEGRAM_LIMIT = 4096

#: shown instead of an answer with no text, so the header is never sent alone
EMPTY_ANSWER = N_("(empty answer)")


@dataclass(frozen=True)
class Chunk:
    """One Telegram message: its text and the entities that format it."""

    text: str
    entities: list[MessageEntity]


@dataclass(frozen=True)
class FormattedAnswer:
    """An answer ready to send: the messages in order, and the file when it did not fit."""

    messages: list[Chunk]
    attachment: bytes | None
    attachment_name: str | None


def plain(text: str) -> Chunk:
    """A message without formatting, for notices that must not be read as Markdown."""
    return Chunk(text=text, entities=[])


def to_chunks(markdown: str, limit: int = TELEGRAM_LIMIT) -> list[Chunk]:
    """Convert Markdown and split it into messages of at most ``limit`` UTF-16 units.

    Empty or whitespace-only Markdown gives no messages at all, since Telegram
    rejects an empty text.
    """
    text, spans = _convert(markdown)
    return _split(text, spans, limit)


def format_answer(
    label: str, markdown: str, *, limit: int = TELEGRAM_LIMIT, max_messages: int = 3
) -> FormattedAnswer:
    """The messages for one answer of session ``label``, headed by the label in bold.

    An answer that would take more than ``max_messages`` messages would flood the
    chat, so only its start is sent, with a closing line naming the attached file
    that holds the whole original Markdown.
    """
    body, spans = _convert(markdown)
    if _is_blank(body):
        body = _(EMPTY_ANSWER)
        spans = [_Span("italic", 0, u16_len(body))]
    head = _clean(label).replace("\n", " ")
    shift = u16_len(head) + 1
    header = [_Span("bold", 0, shift - 1)] if head else []
    text = f"{head}\n{body}"
    spans = header + [s._replace(start=s.start + shift, end=s.end + shift) for s in spans]

    chunks = _split(text, spans, limit)
    if len(chunks) <= max(1, max_messages):
        return FormattedAnswer(messages=chunks, attachment=None, attachment_name=None)

    name = f"{_file_safe(label)}-answer.md"
    note = _("… (full answer attached as {name})").format(name=name)
    room = limit - u16_len(note) - 1
    if room >= 2:
        first = _split(text, spans, room)[0]
        italic = MessageEntity(type="italic", offset=u16_len(first.text) + 1, length=u16_len(note))
        message = Chunk(text=f"{first.text}\n{note}", entities=[*first.entities, italic])
    else:  # a limit too small for the note: the note alone, cut to size
        message = _split(note, [], limit)[0]
    return FormattedAnswer(
        messages=[message],
        attachment=markdown.encode("utf-8", "replace"),
        attachment_name=name,
    )


# --- conversion -----------------------------------------------------------------------


class _Span(NamedTuple):
    """An entity while text is still being cut: UTF-16 ``start``/``end``, end exclusive."""

    type: str
    start: int
    end: int
    url: str | None = None
    language: str | None = None


#: entity types Telegram takes from a bot as they come out of the converter
#: (custom_emoji needs a bot with a purchased username; it is dropped)
_KEPT = frozenset({
    "bold", "italic", "underline", "strikethrough", "spoiler", "code", "pre",
    "text_link", "blockquote", "expandable_blockquote",
})
_QUOTES = frozenset({"blockquote", "expandable_blockquote"})
#: Telegram takes only http(s), tg and ton URLs (tdlib's check_url); Claude often
#: links relative file paths, which keep their text but lose the link
_LINK_OK = re.compile(r"(?:https?|tg|ton)://\S+\Z", re.IGNORECASE)
#: rounds of escaping HTML: each round escapes every '<' the parser still reads
#: as HTML, so two rounds are the rule and the bound only stops a pathology
_HTML_ROUNDS = 4

# Telegram (tdlib's clean_input_string) replaces C0 controls with spaces, drops CR and
# removes U+2028..U+202E; doing the same first (line and paragraph separators become
# line breaks) keeps the UTF-16 offsets computed here the ones Telegram sees.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NEWLINES = re.compile(r"\r\n?|[\u2028\u2029]")
_BIDI_EMBEDDING = re.compile(r"[\u202a-\u202e]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
#: characters Telegram counts as nothing when it decides whether a text is empty
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u200e\u200f\u202e\ufeff\xa0"))
_BLANK_LINES = re.compile(r"(?:[^\S\n]*\n)+")


def _convert(markdown: str) -> tuple[str, list[_Span]]:
    """Markdown → (text, spans); the cleaned source as plain text if the converter fails."""
    source = _clean(markdown)
    if _is_blank(source):
        return "", []
    import telegramify_markdown

    try:
        text, entities = telegramify_markdown.convert(_literal_html(source), config=_config())
        return text, _kept_spans(text, entities)
    except Exception:  # noqa: BLE001 - any converter bug must degrade, never lose the answer
        return source, []


@cache
def _config() -> Any:
    """One private config, so nobody's change to the library's global one leaks in."""
    from telegramify_markdown.config import RenderConfig

    return RenderConfig.isolated()


def _clean(text: str) -> str:
    """Text as Telegram will store it, so nothing shifts the entity offsets afterwards.

    Lone surrogates (possible in a str decoded leniently) become U+FFFD: they cannot
    be sent and cannot be counted in UTF-16.
    """
    if _SURROGATE.search(text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    text = _NEWLINES.sub("\n", text)
    text = _BIDI_EMBEDDING.sub("", text)
    return _CONTROLS.sub(" ", text)


def _literal_html(markdown: str) -> str:
    """Backslash-escape every '<' that opens HTML, so the converter shows it as text.

    The converter drops HTML silently: ``Vec<T>`` would arrive as ``Vec`` and a
    ``<details>`` block would swallow the paragraph after it. Claude writes such
    text meaning it literally; Telegram renders no HTML from entities anyway.
    Parse errors leave the Markdown as it was.
    """
    import pyromark
    from telegramify_markdown.converter import STANDARD_OPTIONS

    text = markdown
    try:
        for _ in range(_HTML_ROUNDS):
            data = text.encode("utf-8")
            cuts: set[int] = set()
            for event, where in pyromark.events_with_range(text, options=STANDARD_OPTIONS):
                if isinstance(event, dict) and ("Html" in event or "InlineHtml" in event):
                    start, end = where["start"], where["end"]
                    cuts.update(i for i in range(start, end) if data[i] == 0x3C)  # '<'
            if not cuts:
                break
            bounds = [0, *sorted(cuts), len(data)]
            text = b"\\".join(data[a:b] for a, b in pairwise(bounds)).decode("utf-8")
    except Exception:  # noqa: BLE001 - escaping is a nicety; the converter still runs
        return markdown
    return text


def _kept_spans(text: str, entities: list) -> list[_Span]:
    """The converter's entities Telegram accepts, clamped to the text and ordered.

    Telegram does not nest quotes, so a quote inside a quote keeps only the outer one.
    """
    total = u16_len(text)
    spans: list[_Span] = []
    for e in entities:
        start, end = max(0, e.offset), min(total, e.offset + e.length)
        if e.type not in _KEPT or end <= start:
            continue
        url = language = None
        if e.type == "text_link":
            if not _LINK_OK.match(e.url or ""):
                continue
            url = e.url
        if e.type == "pre" and e.language and e.language.split():
            language = e.language.split()[0]
        spans.append(_Span(e.type, start, end, url, language))
    spans.sort(key=lambda s: (s.start, -s.end))
    kept, quote_end = [], -1
    for s in spans:
        if s.type in _QUOTES:
            if s.start < quote_end:
                continue
            quote_end = s.end
        kept.append(s)
    return kept


# --- splitting ------------------------------------------------------------------------


def _split(text: str, spans: list[_Span], limit: int) -> list[Chunk]:
    """Cut ``text`` into chunks of at most ``limit`` UTF-16 units, clipping the spans.

    Each cut goes at the best place in the second half of the room: a blank line
    outside code, then a line break outside code, then any line break, then a space;
    failing all, exactly at the limit. The first two never leave a title (a line that
    is bold but for a leading symbol, as headings convert) as the last line of a
    message. A code block cut in two stays ``pre``, with its language, in both pieces.
    """
    if limit < 2:
        raise ValueError(f"limit must leave room for one character, got {limit}")
    u16 = _utf16_table(text)
    code = [(bisect_left(u16, s.start), bisect_left(u16, s.end)) for s in spans if s.type == "pre"]
    titles = _title_ends(text, u16, spans)
    pieces: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while start < n:
        blank = _BLANK_LINES.match(text, start)
        if blank:
            start = blank.end()
            continue
        room_end = bisect_right(u16, u16[start] + limit) - 1
        if room_end >= n:
            pieces.append((start, n))
            break
        floor = bisect_left(u16, u16[start] + limit // 2)
        cut, resume = _cut(text, start, floor, room_end, code, titles)
        pieces.append((start, cut))
        start = resume

    chunks = []
    for a, b in pieces:
        while b > a and text[b - 1].isspace():
            b -= 1
        if not _is_blank(text[a:b]):
            chunks.append(Chunk(text=text[a:b], entities=_clip(spans, u16[a], u16[b])))
    return chunks


def _cut(
    text: str,
    start: int,
    floor: int,
    room_end: int,
    code: list[tuple[int, int]],
    titles: set[int],
) -> tuple[int, int]:
    """Where the chunk from ``start`` ends and where the next begins (string indices).

    A line break or space at the cut is dropped; a cut at the limit drops nothing.
    """

    def readable(i: int) -> bool:
        return i not in titles and not any(a <= i < b for a, b in code)

    for needle, anywhere in (("\n\n", False), ("\n", False), ("\n", True)):
        i = text.rfind(needle, floor, room_end + len(needle))
        while i >= floor:
            if anywhere or readable(i):
                return i, i + 1
            i = text.rfind(needle, floor, i + len(needle) - 1)
    space = text.rfind(" ", floor, room_end)
    if space > start:
        return space + 1, space + 1
    return room_end, room_end


def _title_ends(text: str, u16: list[int], spans: list[_Span]) -> set[int]:
    """String indices of the line breaks that end a title line."""
    ends = set()
    for s in spans:
        if s.type != "bold":
            continue
        a, b = bisect_left(u16, s.start), bisect_left(u16, s.end)
        line = text.rfind("\n", 0, a) + 1
        if text.startswith("\n", b) and "\n" not in text[a:b]:
            if not any(ch.isalnum() for ch in text[line:a]):
                ends.add(b)
    return ends


def _clip(spans: list[_Span], lo: int, hi: int) -> list[MessageEntity]:
    """The parts of ``spans`` inside UTF-16 range [lo, hi), re-based to start at ``lo``."""
    out = []
    for s in spans:
        start, end = max(s.start, lo), min(s.end, hi)
        if end > start:
            out.append(MessageEntity(
                type=s.type, offset=start - lo, length=end - start, url=s.url, language=s.language,
            ))
    return out


# --- small helpers --------------------------------------------------------------------


def u16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit of Telegram's limits and offsets."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def _utf16_table(text: str) -> list[int]:
    """``table[i]`` is the UTF-16 offset of ``text[i]``; ``table[len(text)]`` the length."""
    if text.isascii():
        return list(range(len(text) + 1))
    table, offset = [0], 0
    for ch in text:
        offset += 2 if ord(ch) > 0xFFFF else 1
        table.append(offset)
    return table


def _is_blank(text: str) -> bool:
    """Whether Telegram would call ``text`` empty (it ignores zero-width characters)."""
    return not text.translate(_INVISIBLE).strip()


def _file_safe(label: str) -> str:
    """The label with path separators and control characters made harmless in a file name."""
    return re.sub(r"[\x00-\x1f\x7f/\\]", "_", label)
