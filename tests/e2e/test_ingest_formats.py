"""Books as publishers make them, end to end on the real stack (Qdrant Edge, SQLite, BM25,
graph, the hash embedder): PDFs typeset by WeasyPrint, LibreOffice and xelatex, Word files
written by LibreOffice and pandoc, scanned pages (tests/fixtures/layout)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.registry import Upload
from bot.router import Invocation, Line
from ingest.cli import add_ingest_arguments, run_ingest
from ingest.loaders.ocr import tesseract_path
from retrieval.types import Chunk, Filter
from tests.e2e.test_ingest import Env, env_fixture  # noqa: F401  (the real stack: `env`)
from tests.reliability.helpers.stack import open_app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "layout"
TRUTH = json.loads((FIXTURES / "truth.json").read_text(encoding="utf-8"))
BOOKS = [name for name, t in TRUTH.items() if name.endswith(".pdf") and "chapters" in t]


def _norm(text: str) -> str:
    return re.sub(r"[\s\u3000─餽\ufffd]+", "", text)


async def _ingest(env: Env, *argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_ingest_arguments(parser)
    return await run_ingest(env.indexer, parser.parse_args(list(argv)))


async def _chunks(env: Env, key: str) -> list[Chunk]:
    """A document's chunks in order, by its title or its file's name."""
    [record] = [r for r in await env.indexer.documents() if key in (r.source, Path(r.path).name)]
    chunks = await env.store.scroll(Filter(equals={"doc_id": record.doc_id}), limit=1000)
    return sorted(chunks, key=lambda c: c.position)


def _true_path(truth: dict, text: str) -> str:
    """The heading path of the section most of the chunk's sentences come from."""
    votes: dict[str, int] = {}
    for ch in truth["chapters"]:
        sections = [((ch["heading"],), ch["paragraphs"])]
        sections += [
            ((ch["heading"], s["heading"]), s["paragraphs"]) for s in ch.get("sections", [])
        ]
        for path, paras in sections:
            for sentence in re.split(r"(?<=[。！？；.;?!])", _norm("".join(paras))):
                if len(sentence) >= 4 and sentence in _norm(text):
                    key = " > ".join(_norm(h) for h in path)
                    votes[key] = votes.get(key, 0) + len(sentence)
    return max(votes, key=lambda k: votes[k]) if votes else "?"


async def test_producers_pdfs_are_labelled_by_their_chapters_without_running_lines(
    env: Env, tmp_path: Path
) -> None:
    folder = tmp_path / "books"
    folder.mkdir()
    for name in BOOKS:
        shutil.copy(FIXTURES / name, folder / name)
    assert await _ingest(env, str(folder)) == 0
    for name in BOOKS:
        truth = TRUTH[name]
        chunks = await _chunks(env, name)
        right = sum(
            1 for c in chunks if _norm(c.chapter).replace(">", " > ") == _true_path(truth, c.text)
        )
        assert right / len(chunks) >= 0.95, (name, right, len(chunks))
        labels = {part for c in chunks for part in c.chapter.split(" > ")}
        headings = {
            h
            for ch in truth["chapters"]
            for h in [ch["heading"], *[s["heading"] for s in ch.get("sections", [])]]
        }
        assert {_norm(x) for x in labels} == {_norm(h) for h in headings}  # whole, no body text
        for chunk in chunks:  # what a quote is cut from
            assert not any(r in chunk.text for r in truth["running"]) and not re.search(
                r"\d", chunk.text
            )


async def test_a_question_about_ruth_4_is_cited_under_chapter_4(tmp_path: Path) -> None:
    async with open_app(tmp_path / "data", corpus=False) as app:
        admin = Actor("console", "1", "1", is_admin=True)
        upload = Upload.of((FIXTURES / "ruth-weasyprint.pdf").read_bytes(), "ruth.pdf")
        done = await app.router.answer(Invocation(admin, Line("/ingest"), upload=upload))
        assert done is not None and "已导入《路得记》" in done.plain()
        reply = await app.router.answer(
            Invocation(admin, Line("/ask 波阿斯对那至近的亲属说了什么？"))
        )
        assert reply is not None
        text = reply.plain()
        assert "【路得记，第四章\u3000波阿斯赎产娶路得】" in text
        assert "第三章\u3000禾场上的夜晚路" not in text  # the heading holds no body text
        assert not re.search(r"— \d+ —", text)  # WeasyPrint's page-number footer


async def test_a_scanned_pdf_gets_a_message_naming_its_pages_and_nothing_is_written(
    env: Env, tmp_path: Path
) -> None:
    for name in ("scan-ruth.pdf", "mixed-scan.pdf"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    assert (
        await _ingest(env, str(tmp_path / "scan-ruth.pdf"), str(tmp_path / "mixed-scan.pdf")) == 1
    )
    assert await env.indexer.documents() == [] and await env.store.count() == 0


def _require_tesseract() -> None:
    if tesseract_path() is None:
        if os.environ.get("CI"):  # CI installs it (.ci/run): never skip there
            pytest.fail("tesseract is not installed")
        pytest.skip(
            "tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-chi-sim)"
        )


async def test_ocr_reads_a_scanned_page(env: Env, tmp_path: Path) -> None:
    _require_tesseract()
    shutil.copy(FIXTURES / "scan-ruth.pdf", tmp_path / "scan-ruth.pdf")
    assert await _ingest(env, str(tmp_path / "scan-ruth.pdf"), "--ocr") == 0
    [record] = await env.indexer.documents()
    chunks = await _chunks(env, record.source)
    text = "".join(c.text for c in chunks)
    want = _norm("".join(TRUTH["ruth-weasyprint.pdf"]["chapters"][0]["paragraphs"]))
    got = _norm(text)
    # Tesseract reads ~94 % of this page's characters (bench/results/pdf-layout.md).
    found = sum(1 for i in range(0, 600, 6) if want[i : i + 3] in got)
    assert found >= 80, found
    assert any("拿俄米与路得归回伯利恒" in _norm(c.chapter) for c in chunks)


async def test_a_word_outline_keeps_its_levels(env: Env, tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "outline-libreoffice.docx", tmp_path / "outline.docx")
    assert await _ingest(env, str(tmp_path / "outline.docx")) == 0
    chunks = await _chunks(env, "新约职事")
    assert {c.type for c in chunks} == {"outline"}
    assert [c.extra["path"] for c in chunks][:2] == [
        "新约职事 > 壹\u3000新约职事的性质与内容",
        "新约职事 > 贰\u3000保罗的职事",
    ]
    assert "（一）旧约的职事是字句的职事" in chunks[0].text


async def test_word_footnotes_become_footnote_chunks_with_their_verse(
    env: Env, tmp_path: Path
) -> None:
    shutil.copy(FIXTURES / "message-notes-pandoc.docx", tmp_path / "notes.docx")
    assert await _ingest(env, str(tmp_path / "notes.docx"), "--title", "神圣的分赐") == 0
    notes = [c for c in await _chunks(env, "神圣的分赐") if c.type == "footnote"]
    assert [(c.chapter, c.scripture_refs[-1]) for c in notes] == [
        ("弗1:3-14", "Eph.1.14"),
        ("林前15:45", "1Cor.15.45"),
        ("罗8:2", "Rom.8.2"),
    ]
    assert notes[1].text.endswith("注2\u3000末后的亚当成了赐生命的灵，见林前十五45。")
