"""A quote from a footnote chunk is the note's, not the verse line that opens the chunk (issue
24, item 7), on the bundled sample footnotes (ingest/samples/footnote-*.md, original texts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.manifest import DocMeta
from ingest.pipeline import build_document
from ingest.samples import SAMPLES_DIR
from retrieval.answer import extractive_answer, not_addressed_answer
from retrieval.answer.result import quotable
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
