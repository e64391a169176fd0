"""Books as publishers make them, end to end on the real stack (Qdrant Edge, SQLite, BM25,
graph, the hash embedder): PDFs typeset by WeasyPrint, LibreOffice and xelatex, Word files
written by LibreOffice and pandoc, scanned pages (tests/fixtures/layout)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
from difflib import SequenceMatcher
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.cli import _parser
from bot.registry import Upload
from bot.router import Invocation, Line
from ingest.cli import add_ingest_arguments, run_ingest
from ingest.loaders import LoadError, load_document
from ingest.loaders.ocr import tesseract_path
from retrieval.types import Chunk, Filter
from tests.e2e.test_ingest import Env, env_fixture  # noqa: F401  (the real stack: `env`)
from tests.reliability.helpers.stack import open_app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "layout"
TRUTH = json.loads((FIXTURES / "truth.json").read_text(encoding="utf-8"))
BOOKS = [name for name, t in TRUTH.items() if name.endswith(".pdf") and "chapters" in t]
# One sample message with a title block and footnotes, from every producer (PDF, .docx, EPUB).
MESSAGES = [name for name, t in TRUTH.items() if "blocks" in t]


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


async def _upload_and_ask(tmp_path: Path, fixture: str, title: str, question: str) -> str:
    """A fixture uploaded with /ingest in a chat (it must be ingested as `title`), then the
    reply to `/ask question`, as text."""
    async with open_app(tmp_path / "data", corpus=False) as app:
        admin = Actor("console", "1", "1", is_admin=True)
        upload = Upload.of((FIXTURES / fixture).read_bytes(), Path(fixture).name)
        done = await app.router.answer(Invocation(admin, Line("/ingest"), upload=upload))
        assert done is not None and f"已导入《{title}》" in done.plain()
        reply = await app.router.answer(Invocation(admin, Line(f"/ask {question}")))
        assert reply is not None
        return reply.plain()


async def test_a_question_about_ruth_4_is_cited_under_chapter_4(tmp_path: Path) -> None:
    text = await _upload_and_ask(
        tmp_path, "ruth-weasyprint.pdf", "路得记", "波阿斯对那至近的亲属说了什么？"
    )
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


def _in_ci() -> bool:
    """.ci/run runs the suite sealed (it sets TESTS_NETWORK_SEALED there); CI services set CI."""
    return bool(os.environ.get("CI") or os.environ.get("TESTS_NETWORK_SEALED"))


def _require_tesseract() -> None:
    if tesseract_path() is None:
        if _in_ci():  # CI installs it (scripts/setup.sh --ocr in .ci/run): never skip there
            pytest.fail("tesseract is not installed")
        pytest.skip(
            "tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-chi-sim)"
        )


def test_the_ocr_tests_fail_rather_than_skip_where_ci_runs_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """README: the OCR tests skip outside CI and never in it; .ci/run sets no CI variable,
    but it runs the tests sealed, with TESTS_NETWORK_SEALED=1."""
    ci_run = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text(encoding="utf-8")
    assert "TESTS_NETWORK_SEALED=1" in ci_run and "setup.sh --ocr" in ci_run
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("TESTS_NETWORK_SEALED", raising=False)
    with pytest.raises(pytest.skip.Exception):
        _require_tesseract()
    monkeypatch.setenv("TESTS_NETWORK_SEALED", "1")
    with pytest.raises(pytest.fail.Exception):
        _require_tesseract()


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


async def test_the_refusal_of_a_scan_suggests_a_command_that_reads_it(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command the refusal names, run exactly as written from the file's folder, reads
    the scan; a book with a chapter a page gets a label a chapter (issue 43)."""
    _require_tesseract()
    shutil.copy(FIXTURES / "scan-joseph.pdf", tmp_path / "scan-joseph.pdf")
    with pytest.raises(LoadError) as refused:
        load_document(tmp_path / "scan-joseph.pdf")
    commands = {
        re.findall(r"`(baibao ingest[^`]*)`", m)[0] for m in (refused.value.zh, refused.value.en)
    }
    assert commands == {"baibao ingest --ocr scan-joseph.pdf"}
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(commands.pop())
    assert argv[0] == "baibao"
    assert await run_ingest(env.indexer, _parser().parse_args(argv[1:])) == 0
    chunks = await _chunks(env, "scan-joseph.pdf")
    labels = list(dict.fromkeys(c.chapter for c in chunks))
    want = [ch["heading"] for ch in TRUTH["joseph-short-weasyprint.pdf"]["chapters"]]
    assert len(labels) == len(want)  # one label a chapter, never one over all three
    for label, heading in zip(labels, want, strict=True):
        assert label[:3] == heading[:3]
        assert SequenceMatcher(None, _norm(label), _norm(heading)).ratio() >= 0.8, label


async def test_a_noisy_scan_never_labels_text_with_misread_lines(env: Env, tmp_path: Path) -> None:
    """On a poor scan OCR reads lines of body text large and unsure: none becomes a label,
    and every line the reader was sure of stays in the text."""
    _require_tesseract()
    shutil.copy(FIXTURES / "scan-noisy-joseph.pdf", tmp_path / "noisy.pdf")
    assert await _ingest(env, "--ocr", str(tmp_path / "noisy.pdf")) == 0
    chunks = await _chunks(env, "noisy.pdf")
    headings = [_norm(ch["heading"]) for ch in TRUTH["joseph-short-weasyprint.pdf"]["chapters"]]
    for label in {c.chapter for c in chunks if c.chapter}:
        close = max(SequenceMatcher(None, _norm(label), h).ratio() for h in headings)
        assert close >= 0.8, label
    text = _norm("".join(c.text for c in chunks))
    truth = _norm(
        "".join(
            p
            for ch in TRUTH["joseph-short-weasyprint.pdf"]["chapters"][:2]
            for p in ch["paragraphs"]
        )
    )
    found = sum(1 for i in range(0, len(truth) - 3, 6) if truth[i : i + 3] in text)
    assert found >= 0.5 * len(range(0, len(truth) - 3, 6)), found


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


async def test_every_producers_footnotes_are_found_and_cited_by_their_verse(
    env: Env, tmp_path: Path
) -> None:
    """A question in a note's own words finds the note: a chunk of its own holding the note
    and the sentence its mark follows, labelled with the verse the note cites."""
    for i, name in enumerate(MESSAGES):
        shutil.copy(FIXTURES / name, tmp_path / name)
        assert await _ingest(env, str(tmp_path / name), "--title", f"分赐{i}") == 0
    for i, name in enumerate(MESSAGES):
        for note in TRUTH[name]["notes"]:
            result = await env.search.search(
                note["text"], flt=Filter(equals={"source": f"分赐{i}"}), limit=3
            )
            top = result.hits[0].chunk
            assert top.type == "footnote", (name, note["text"], top.text)
            assert _norm(note["text"]) in _norm(top.text), name
            assert _norm(note["anchor"]) in _norm(top.text), name
            assert re.match(r"^[\u4e00-\u9fff]{1,3}\d+:\d", top.chapter), (name, top.chapter)
    records = await env.indexer.documents()
    assert {r.author for r in records} == {TRUTH[MESSAGES[0]]["author"]}


async def test_a_note_in_a_quoted_verse_of_a_typst_pdf_answers_a_question(tmp_path: Path) -> None:
    """Issue 43: Typst's superscript marks were lines of their own and its notes were lost."""
    text = await _upload_and_ask(
        tmp_path, "message-typst.pdf", "神圣的分赐与召会", "居住的所在与圣殿有什么关系？"
    )
    assert "注4\u3000「居住的所在」与上节的「圣殿」相连，参弗二21–22。" in text
    assert "【神圣的分赐与召会，弗2:21-22】" in text
    assert not re.search(r"^\s*>?\s*\d\s*$", text, re.MULTILINE)  # no mark on a line
    assert "示例作者" not in text and "1975年3月" not in text  # the title block
