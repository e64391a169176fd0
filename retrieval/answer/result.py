"""What `/ask` found, before it is a reply: `Answer`, for the chat reply and `baibao ask --json`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kernel.i18n import Lang
from retrieval.answer.asks import Asked
from retrieval.answer.notices import Notice
from retrieval.answer.prompt import Passage
from retrieval.answer.quotes import excerpt, quote_at
from retrieval.answer.verify import Verified
from retrieval.labels import CitationLabel
from retrieval.requests import Script
from retrieval.text import bible_in_script
from retrieval.types import Chunk, GraphPath, Hit

EXTRACTIVE_PASSAGES = 5
RELATED_PASSAGES = 3
Paths = Sequence[GraphPath]

Mode = Literal["llm", "extractive"]


@dataclass(frozen=True, slots=True)
class Cited:
    """A passage shown with an answer: its label, the sentence quoted from it, and — for an
    extractive answer — the excerpt shown. `verified` is False only for a passage the model
    cited with a quotation that is not in it (removed from the answer, listed for audits)."""

    chunk: Chunk
    label: CitationLabel
    quote: str
    excerpt: str = ""
    verified: bool = True

    def as_json(self, lang: Lang) -> dict[str, Any]:
        return {
            "label": self.label.text(lang),
            "source": self.chunk.source,
            "chapter": self.chunk.chapter,
            "quote": self.quote,
            "chunk_id": self.chunk.id,
            "verified": self.verified,
        }


@dataclass(frozen=True, slots=True)
class Answer:
    """`addressed` False: the corpus does not address the question (the relevance gate said
    so, or the model did); `related` then holds the nearest passages, offered as related
    reading, never as the answer — or nothing, when they share no meaning with the question. `text` is the verified model answer (empty when extractive:
    the citations' excerpts are the answer). `notice` says why a model answer fell back."""

    question: str
    lang: Lang
    mode: Mode
    addressed: bool
    text: str = ""
    citations: tuple[Cited, ...] = ()
    related: tuple[Cited, ...] = ()
    graph_paths: tuple[GraphPath, ...] = ()
    notice: Notice | None = None
    # Not addressed because the question asks for a date, number, place or person that no
    # retrieved passage about its subject states (`retrieval.answer.asks`).
    unstated: Asked | None = None
    removed: int = 0  # citations the verifier removed
    graph_helped: bool = False  # a passage shown came from the graph track

    def as_json(self, answer_text: str) -> dict[str, Any]:
        """`answer_text`: the answer as shown (the reply's text without its source list)."""
        return {
            "question": self.question,
            "mode": self.mode,
            "addressed": self.addressed,
            "answer": answer_text,
            "citations": [c.as_json(self.lang) for c in self.citations],
            "related": [c.as_json(self.lang) for c in self.related],
            "graph_paths": [p.to_json() for p in self.graph_paths],
        }


def _quote(chunk: Chunk, label: CitationLabel, spot: str, script: Script) -> str:
    if chunk.type == "bible":  # a verse is quoted as the verse, whole
        return _in_script(chunk, " ".join(chunk.text.split()), script)
    headings = [h for part in label.section for h in part.split("；")]
    return _in_script(chunk, quote_at(quotable(chunk), spot, headings=headings), script)


_NOTE_MARK = re.compile(r"^\s*(?:注\s*\d+|Note\s*\d+)", re.IGNORECASE)


def quotable(chunk: Chunk) -> str:
    """The text a quote of `chunk` is taken from. A footnote chunk opens with the line its
    notes annotate (`弗1:3　愿颂赞…`, or the sentence a Word footnote's mark follows) and goes
    on with the notes: a quote from it is a note's, so that line is left out — unless the
    chunk is nothing else, or opens with a note itself."""
    if chunk.type != "footnote" or _NOTE_MARK.match(chunk.text):
        return chunk.text
    _, _, notes = chunk.text.partition("\n")
    return notes if notes.strip() else chunk.text


def _in_script(chunk: Chunk, text: str, script: Script) -> str:
    """Bible text in the reader's script, as `/cite` shows it (the 1919 CUV is stored in
    Traditional); a ministry passage is quoted as it is written."""
    return bible_in_script(text, script) if chunk.type == "bible" else text


def _paths(paths: Paths) -> tuple[GraphPath, ...]:
    return tuple(paths)


def _unique(hits: Sequence[Hit]) -> list[Hit]:
    seen: set[str] = set()
    out = []
    for hit in hits:
        if hit.chunk.id not in seen:
            seen.add(hit.chunk.id)
            out.append(hit)
    return out


def model_answer(
    question: str,
    lang: Lang,
    verified: Verified,
    passages: Sequence[Passage],
    graph_paths: Paths = (),
    *,
    script: Script = "simplified",
) -> Answer:
    """The verified model answer; its sources are the passages it truly cited, each once, quoted
    where the claim rests (plus, unverified, those it misquoted)."""
    spots: dict[int, tuple[Passage, str]] = {}
    for use in verified.uses:
        spots.setdefault(use.passage.index, (use.passage, use.spot))
    cited = [
        Cited(p.chunk, p.label, _quote(p.chunk, p.label, spot, script))
        for p, spot in spots.values()
    ]
    cited += [
        Cited(p.chunk, p.label, _quote(p.chunk, p.label, question, script), verified=False)
        for p in verified.misquoted
        if p.index not in spots
    ]
    return Answer(
        question,
        lang,
        "llm",
        True,
        text=verified.text,
        citations=tuple(cited),
        graph_paths=_paths(graph_paths),
        removed=verified.stats.removed,
        graph_helped=any(p.from_graph for p in passages),
    )


def extractive_answer(
    question: str,
    hits: Sequence[Hit],
    lang: Lang,
    *,
    graph_paths: Paths = (),
    notice: Notice | None = None,
    limit: int = EXTRACTIVE_PASSAGES,
    script: Script = "simplified",
) -> Answer:
    """No model: the top passages verbatim (whole sentences), each labelled. Never invented."""
    shown = _unique(hits)[:limit]
    cited = []
    for hit in shown:
        bible = hit.chunk.type == "bible"
        text = " ".join(hit.chunk.text.split()) if bible else excerpt(hit.chunk.text, question)
        if text:
            label = CitationLabel.of(hit.chunk)
            quote = _quote(hit.chunk, label, question, script)
            cited.append(Cited(hit.chunk, label, quote, _in_script(hit.chunk, text, script)))
    return Answer(
        question,
        lang,
        "extractive",
        True,
        citations=tuple(cited),
        graph_paths=_paths(graph_paths),
        notice=notice,
        graph_helped=any("graph" in h.ranks for h in shown),
    )


def not_addressed_answer(
    question: str,
    hits: Sequence[Hit],
    lang: Lang,
    mode: Mode,
    *,
    graph_paths: Paths = (),
    limit: int = RELATED_PASSAGES,
    script: Script = "simplified",
    unstated: Asked | None = None,
) -> Answer:
    """The corpus does not address the question: the nearest passages, as related reading.
    `unstated`: what it asks for, when the passages are about it but none states that."""
    labels = [(h.chunk, CitationLabel.of(h.chunk)) for h in _unique(hits)[:limit]]
    related = tuple(Cited(c, label, _quote(c, label, question, script)) for c, label in labels)
    return Answer(
        question,
        lang,
        mode,
        False,
        related=related,
        graph_paths=_paths(graph_paths),
        unstated=unstated,
    )
