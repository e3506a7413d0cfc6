"""markdown: Claude's Markdown → Telegram text + entities, in UTF-16 units, split to size."""

from __future__ import annotations

import re

import pytest
import telegramify_markdown
from aiogram.types import MessageEntity
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aipager.bot.markdown import Chunk, FormattedAnswer, format_answer, plain, to_chunks


def u16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def covered(chunk: Chunk, e: MessageEntity) -> str:
    """The text an entity covers, sliced in UTF-16 as Telegram does (raises on a split pair)."""
    data = chunk.text.encode("utf-16-le")
    return data[2 * e.offset : 2 * (e.offset + e.length)].decode("utf-16-le")


def check(chunks: list[Chunk], limit: int) -> None:
    """Every invariant a chunk list must hold before it goes to Telegram."""
    for chunk in chunks:
        assert isinstance(chunk, Chunk)
        assert chunk.text.strip(), "empty message"
        assert u16(chunk.text) <= limit
        for e in chunk.entities:
            assert isinstance(e, MessageEntity)
            assert e.offset >= 0 and e.length > 0
            assert e.offset + e.length <= u16(chunk.text)
            covered(chunk, e)
            dumped = e.model_dump(exclude_none=True)
            assert dumped["type"] == e.type and dumped["offset"] == e.offset
            assert MessageEntity(**dumped) == e


def only(chunk: Chunk, kind: str) -> list[str]:
    return [covered(chunk, e) for e in chunk.entities if e.type == kind]


def squeeze(text: str) -> str:
    """Text without whitespace: splitting may only drop whitespace at the cuts."""
    return re.sub(r"[\s\u200b-\u200f\u202e\ufeff]", "", text)


def paragraphs(count: int, size: int = 150) -> str:
    return "\n\n".join(f"p{i:02d} " + "x" * (size - 4) for i in range(count))


# --- conversion -----------------------------------------------------------------------


def test_inline_styles_cover_their_words():
    (chunk,) = to_chunks("Some **bold**, *italic*, `x = 1` and [docs](https://example.org/a).")
    check([chunk], 4096)
    assert chunk.text == "Some bold, italic, x = 1 and docs."
    assert only(chunk, "bold") == ["bold"]
    assert only(chunk, "italic") == ["italic"]
    assert only(chunk, "code") == ["x = 1"]
    (link,) = [e for e in chunk.entities if e.type == "text_link"]
    assert covered(chunk, link) == "docs" and link.url == "https://example.org/a"


def test_code_block_is_pre_with_language():
    (chunk,) = to_chunks("Run:\n\n```python\nprint('hi')\nx = 2\n```\n\nDone.")
    check([chunk], 4096)
    (pre,) = [e for e in chunk.entities if e.type == "pre"]
    assert pre.language == "python"
    assert covered(chunk, pre) == "print('hi')\nx = 2"
    assert pre.model_dump(exclude_none=True) == {
        "type": "pre", "offset": pre.offset, "length": pre.length, "language": "python"}


def test_emoji_before_an_entity_shifts_offsets_in_utf16():
    (chunk,) = to_chunks("😀🎉 ok **bold** and `code` 👍🏽 *it*")
    check([chunk], 4096)
    bold = next(e for e in chunk.entities if e.type == "bold")
    assert bold.offset == 2 + 2 + 4  # two surrogate pairs, then " ok "
    assert only(chunk, "bold") == ["bold"]
    assert only(chunk, "code") == ["code"]
    assert only(chunk, "italic") == ["it"]


def test_heading_symbol_is_counted_before_the_heading_entity():
    (chunk,) = to_chunks("# Título ñ\n\nbody")
    check([chunk], 4096)
    assert only(chunk, "bold") == ["Título ñ"]


@pytest.mark.parametrize("md", ["", " ", "\n\n\t  \n", "\u200b", "\x00"])
def test_empty_markdown_gives_no_chunks(md):
    assert to_chunks(md) == []


def test_plain_has_no_entities():
    assert plain("⚠️ *not* markdown") == Chunk(text="⚠️ *not* markdown", entities=[])


def test_html_looking_text_stays_visible():
    md = "Use Vec<T> or <b>this</b>, press <Enter>.\n\n<details>\n<summary>s</summary>\n\nbody"
    (chunk,) = to_chunks(md)
    check([chunk], 4096)
    for piece in ("Vec<T>", "<b>this</b>", "<Enter>", "<details>", "<summary>s</summary>", "body"):
        assert piece in chunk.text


def test_code_keeps_its_angle_brackets_unescaped():
    (chunk,) = to_chunks("`a<b>c` then\n\n```html\n<div>x</div>\n```")
    assert only(chunk, "code") == ["a<b>c"]
    assert only(chunk, "pre") == ["<div>x</div>"]


def test_links_telegram_cannot_open_lose_their_entity_not_their_text():
    md = ("[rel](src/app.py) [file](file:///etc/x) [ok](https://a.b/c) [tg](tg://user?id=1)"
          " ![im](p.png)")
    (chunk,) = to_chunks(md)
    check([chunk], 4096)
    urls = [e.url for e in chunk.entities if e.type == "text_link"]
    assert urls == ["https://a.b/c", "tg://user?id=1"]
    for word in ("rel", "file", "ok", "im"):
        assert word in chunk.text


def test_nested_quotes_keep_only_the_outer_quote():
    (chunk,) = to_chunks("> outer\n> > inner")
    check([chunk], 4096)
    assert only(chunk, "blockquote") == ["outer\ninner"]


def test_control_characters_are_cleaned_like_telegram_does():
    (chunk,) = to_chunks("a\x00b\r\nc\rd\u2028e \u202ertl\u202c \ud800 end")
    check([chunk], 4096)
    assert chunk.text == "a b\nc\nd\ne rtl \ufffd end"


def test_converter_failure_falls_back_to_plain_text(monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("converter bug")

    monkeypatch.setattr(telegramify_markdown, "convert", boom)
    assert to_chunks("**still** here") == [Chunk(text="**still** here", entities=[])]


@pytest.mark.parametrize("md", [
    "```python\nnever closed\n  indented",
    "stray * star ** and _ under __ and ` tick",
    "<div><span>unclosed <b>tags",
    "x" * 30_000,
    "שלום **עולם** مرحبا *بالعالم* mixed עברית text",
    "👨‍👩‍👧‍👦" * 3000,
    "\x00\x01\x02**\x00**",
    "[unclosed](http://a.b",
    "| a | b |\n|---|\n| 1 | 2 | 3 |",
    "$x$ costs $5 and ~approx~ ~~gone~~ ||spoiler|| \\(\\frac{a}{b}\\)",
    "- [ ] task\n- [x] done\n  1. nested\n     > quote in list",
])
def test_malformed_markdown_never_raises(md):
    for limit in (4096, 200, 16):
        check(to_chunks(md, limit), limit)
        answer = format_answer("s1", md, limit=limit)
        check(answer.messages, limit)
        assert 1 <= len(answer.messages) <= 3


# --- splitting ------------------------------------------------------------------------


def test_split_prefers_paragraph_boundaries():
    md = paragraphs(6)
    chunks = to_chunks(md, limit=200)
    check(chunks, 200)
    assert [c.text for c in chunks] == md.split("\n\n")


def test_split_falls_back_to_line_boundaries():
    lines = [f"line {i:02d} " + "y" * 50 for i in range(20)]
    chunks = to_chunks("  \n".join(lines), limit=200)  # hard breaks: one paragraph
    check(chunks, 200)
    assert len(chunks) > 1
    assert [line for c in chunks for line in c.text.split("\n")] == lines


def test_split_cuts_an_endless_line_hard():
    word = "".join(chr(ord("a") + i % 26) for i in range(1000))
    chunks = to_chunks(word, limit=200)
    check(chunks, 200)
    assert all(u16(c.text) == 200 for c in chunks)
    assert "".join(c.text for c in chunks) == word


def test_hard_cut_never_splits_a_surrogate_pair():
    chunks = to_chunks("a" + "😀" * 300, limit=201)
    check(chunks, 201)
    assert "".join(c.text for c in chunks) == "a" + "😀" * 300


def test_code_block_split_stays_pre_with_language_in_every_piece():
    code = [f"value_{i:02d} = compute({i}, flag=True)" for i in range(40)]
    chunks = to_chunks("```python\n" + "\n".join(code) + "\n```", limit=200)
    check(chunks, 200)
    assert len(chunks) > 1
    for chunk in chunks:
        (pre,) = chunk.entities
        assert pre.type == "pre" and pre.language == "python"
        assert covered(chunk, pre) == chunk.text
    assert [line for c in chunks for line in c.text.split("\n")] == code


def test_code_block_that_fits_is_not_split():
    code = "\n".join(f"print({i})" for i in range(10))
    md = "a" * 150 + "\n\n```sh\n" + code + "\n```\n\n" + "b" * 150
    chunks = to_chunks(md, limit=200)
    check(chunks, 200)
    assert [only(c, "pre") for c in chunks] == [[], [code], []]


def test_a_heading_is_not_left_at_the_end_of_a_message():
    md = "# Head\n\n" + "a" * 150 + "\n\n## Sub\n\n" + "b" * 150
    chunks = to_chunks(md, limit=200)
    check(chunks, 200)
    assert len(chunks) == 2
    assert "Sub" not in chunks[0].text
    assert chunks[1].text.endswith("Sub\n\n" + "b" * 150)
    assert only(chunks[1], "bold") == ["Sub"]


def test_entities_crossing_a_cut_are_clipped_into_both_chunks():
    chunks = to_chunks("**" + " ".join(["bold words"] * 60) + "**", limit=200)
    check(chunks, 200)
    assert len(chunks) > 2
    for chunk in chunks:
        assert only(chunk, "bold") == [chunk.text]


def _realistic_answer() -> str:
    section = (
        "## Step {n}: update `module_{n}.py` 🚀\n\n"
        "The **first** thing is to check the *config* in [the docs](https://docs.example.com/{n}). "
        "Then run the tests — ✅ they should pass. Some more prose to make the paragraph longer "
        "than a line, with émoji 🎉 and ünïcödé.\n\n"
        "```python\n"
        + "\n".join(f"def handler_{{n}}_{i}(event):\n    return run(event, {i})" for i in range(8))
        + "\n```\n\n"
        "- item one with `inline code`\n- item two with **bold**\n  - nested item\n\n"
        "| name | value |\n|------|-------|\n| a{n} | 1 |\n| b{n} | 2 |\n\n"
        "> Note: quoted remark number {n}.\n\n"
    )
    text = "".join(section.replace("{n}", str(n)) for n in range(30))
    assert len(text.encode("utf-8")) > 20_000
    return text


def test_realistic_20kb_answer_at_the_telegram_limit():
    md = _realistic_answer()
    chunks = to_chunks(md)
    check(chunks, 4096)
    assert 5 <= len(chunks) <= 9
    assert squeeze("".join(c.text for c in chunks)) == squeeze(to_chunks(md, 10**9)[0].text)
    pres = [e for c in chunks for e in c.entities if e.type == "pre" and e.language]
    assert pres and all(e.language == "python" for e in pres)
    code_texts = "".join(covered(c, e) for c in chunks for e in c.entities if e.type == "pre")
    for n in range(30):
        assert f"def handler_{n}_7(event):" in code_texts
    links = {e.url for c in chunks for e in c.entities if e.type == "text_link"}
    assert links == {f"https://docs.example.com/{n}" for n in range(30)}


# --- format_answer --------------------------------------------------------------------


def test_short_answer_has_a_bold_label_header():
    answer = format_answer("jim 🐍", "All **done**.")
    assert isinstance(answer, FormattedAnswer)
    assert answer.attachment is None and answer.attachment_name is None
    (message,) = answer.messages
    check([message], 4096)
    assert message.text == "jim 🐍\nAll done."
    assert only(message, "bold") == ["jim 🐍", "done"]
    assert message.entities[0].offset == 0 and message.entities[0].length == 6


def test_empty_answer_still_says_something():
    (message,) = format_answer("jim", "  \n").messages
    assert message.text == "jim\n(empty answer)"


def test_longer_answer_is_sent_in_parts_with_the_header_only_first():
    answer = format_answer("proj", paragraphs(3), limit=200)
    check(answer.messages, 200)
    assert answer.attachment is None
    assert [m.text.startswith("proj\n") for m in answer.messages] == [True, False, False]
    assert [only(m, "bold") for m in answer.messages] == [["proj"], [], []]


def test_answer_over_max_messages_sends_the_head_and_attaches_the_markdown():
    md = paragraphs(4)
    answer = format_answer("proj", md, limit=200, max_messages=3)
    assert answer.attachment == md.encode("utf-8")
    assert answer.attachment_name == "proj-answer.md"
    (message,) = answer.messages
    check([message], 200)
    assert message.text.startswith("proj\np00 ")
    assert message.text.endswith("\n… (full answer attached as proj-answer.md)")
    assert only(message, "bold") == ["proj"]
    assert only(message, "italic") == ["… (full answer attached as proj-answer.md)"]


def test_attachment_rule_at_realistic_size():
    md = _realistic_answer()
    answer = format_answer("proj", md)
    check(answer.messages, 4096)
    assert len(answer.messages) == 1 and answer.attachment == md.encode("utf-8")
    assert format_answer("proj", md, max_messages=20).attachment is None


def test_attachment_name_cannot_carry_a_path():
    answer = format_answer("a/b", paragraphs(5), limit=200)
    assert answer.attachment_name == "a_b-answer.md"


# --- fuzz -----------------------------------------------------------------------------

_PIECES = st.sampled_from([
    "**", "*", "_", "__", "`", "```", "```py\n", "~~~\n", "\n", "\n\n", "# ", "## ", "- ", "1. ",
    "> ", "> > ", "[a](https://x.y/z)", "[b](rel/p)", "![i](u.png)", "<b>", "</div>", "<Enter>",
    "|", "| a | b |\n|---|---|\n", "---", "😀", "👨‍👩‍👧", "שלום", "مرحبا",
    "\x00", "\r\n", "\t",
    "~~", "||", "$", "\\", "  ", "word ", "ñ", "\u200b", "\u202e", "    code\n", "[^1]",
])
_MARKDOWNISH = st.lists(st.one_of(_PIECES, st.text(max_size=20)), max_size=60).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(md=_MARKDOWNISH, limit=st.sampled_from([16, 40, 200, 4096]))
def test_fuzz_to_chunks_keeps_invariants(md, limit):
    chunks = to_chunks(md, limit)
    check(chunks, limit)
    whole = to_chunks(md, 10**9)
    assert len(whole) <= 1
    assert squeeze("".join(c.text for c in chunks)) == squeeze(whole[0].text if whole else "")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(md=_MARKDOWNISH, label=st.text(max_size=12), limit=st.sampled_from([16, 60, 200, 4096]),
       max_messages=st.integers(1, 4))
def test_fuzz_format_answer_keeps_invariants(md, label, limit, max_messages):
    answer = format_answer(label, md, limit=limit, max_messages=max_messages)
    check(answer.messages, limit)
    assert 1 <= len(answer.messages) <= max_messages
    assert (answer.attachment is None) == (answer.attachment_name is None)
    if answer.attachment is not None:
        assert len(answer.messages) == 1
        assert answer.attachment_name.endswith("-answer.md")
