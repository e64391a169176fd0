"""A quote from a footnote chunk is the note's, not the verse line that opens the chunk (issue
24, item 7), on the bundled sample footnotes (ingest/samples/footnote-*.md, original texts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.manifest import DocMeta
from ingest.pipeline import build_document
from ingest.samples import SAMPLES_DIR
from retrieval.answer import extractive_answer, not_addressed_answer
from retrieval.answer.quotes import _only_references, quote_at
from retrieval.answer.result import quotable
from retrieval.scholar import note_text
from retrieval.types import Chunk, ChunkType, Hit

FOOTNOTES = sorted(SAMPLES_DIR.glob("footnote-*.md"))


def footnote_chunks(path: Path) -> list[Chunk]:
    meta = DocMeta(title=path.stem, type="footnote")
    chunks = build_document(path, meta, max_bytes=10**7, tagger=lambda _: ()).chunks
    assert chunks and all(c.type == "footnote" for c in chunks)
    return chunks


def _hit(chunk: Chunk) -> Hit:
    return Hit(chunk=chunk, score=1.0)


@pytest.mark.parametrize("path", FOOTNOTES, ids=lambda p: p.name)
def test_a_question_in_the_verses_own_words_is_answered_with_a_note(path: Path) -> None:
    """The question repeats the verse line word for word, so that line is the sentence that
    best matches it: the quote is still a sentence of the notes."""
    for chunk in footnote_chunks(path):
        verse_line, _, notes = chunk.text.partition("\n")
        assert notes.strip(), chunk.text  # every sample verse has notes
        question = verse_line.split("　", 1)[-1]
        for answer in (
            extractive_answer(question, [_hit(chunk)], "zh"),
            not_addressed_answer(question, [_hit(chunk)], "zh", "extractive"),
        ):
            (cited,) = answer.citations or answer.related
            quote = cited.quote.rstrip("…")
            assert quote and quote in notes, (chunk.chapter, cited.quote)
            assert quote not in verse_line, (chunk.chapter, cited.quote)


def _chunk(text: str, kind: ChunkType = "footnote") -> Chunk:
    return Chunk(id="c", text=text, search_text=text, doc_id="d", source="s", type=kind)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("弗1:3　愿颂赞归与我们主耶稣基督的父神！", "footnote"),  # the verse and nothing else
        ("注1　这是注解的第一段。\n这是注解的第二段。", "footnote"),  # a Word note, no sentence
        ("第一行。\n第二行。", "message"),  # not a footnote
    ],
)
def test_the_whole_text_is_quoted_when_no_opening_line_stands_before_notes(
    text: str, kind: ChunkType
) -> None:
    assert quotable(_chunk(text, kind)) == text


def test_a_sample_footnote_is_quoted_from_its_notes() -> None:
    (chunk, *_) = footnote_chunks(SAMPLES_DIR / "footnote-eph.md")
    assert quotable(chunk) == chunk.text.partition("\n")[2]


@pytest.mark.parametrize(
    "spot",
    ["提前1:4", "弗1:22-23", "启21:2", "弗一10是什么意思？", "Rom 8:29"],
)
def test_a_cross_reference_is_never_the_quote_of_a_note(spot: str) -> None:
    """`参弗三9，提前一4。` names the verse a reader looked up (/cite 提前1:4 lists this note among
    the related notes) but says nothing: the quote is the note's sentence it follows, a sentence
    with content, on every sample note."""
    for path in FOOTNOTES:
        for chunk in footnote_chunks(path):
            quote = quote_at(note_text(chunk), spot)
            assert not _only_references(quote), (chunk.text, quote)
            assert not quote.startswith("参"), (chunk.text, quote)


def test_a_cross_reference_gives_way_to_the_sentence_it_follows() -> None:
    note = (
        "注1　神的经纶是要使万有归一。这个归一乃是藉着神圣的分赐。参弗三9，提前一4。\n"
        "注2　召会乃是万有归一的起点。到了新耶路撒冷，这归一要完满显出。参弗一22–23，启二十一2。"
    )
    assert quote_at(note, "提前1:4") == "这个归一乃是藉着神圣的分赐。"
    assert quote_at(note, "弗1:22-23") == "到了新耶路撒冷，这归一要完满显出。"
    assert quote_at("See Rom. 8:29; 2 Cor. 4:4.", "Rom 8:29") == "See Rom. 8:29; 2 Cor. 4:4."
