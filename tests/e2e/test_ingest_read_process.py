"""An ingest that reads in a process of its own (`ingest.read_process`) indexes exactly what one
reading on threads does, on the real stack (Qdrant Edge, SQLite, BM25, the growing graph, the
hash embedder): the sample corpus, the layout fixtures (PDF, Word, EPUB, scans, an encrypted
file), files that cannot be read. Its child dies with the ingest, however the ingest ends; a
child killed mid-ingest costs at most the file it held, which the next ingest adds."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import os
import shutil
import signal
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ingest.cli import add_ingest_arguments, run_ingest
from ingest.loaders import LoadError
from ingest.manifest import DocMeta
from ingest.pipeline import (
    Built,
    IngestSummary,
    Pipeline,
    _finish,
    _untagged,
    prepare_document,
)
from ingest.read_process import ReadOffload, ReadProcess, in_thread
from ingest.samples import SAMPLES_DIR
from retrieval.index import DocumentRecord
from retrieval.keyword import Bm25Encoder
from retrieval.text import Tokenizer
from retrieval.types import Chunk, SparseVector
from tests.e2e.test_ingest import Env, open_env
from tests.unit.test_read_process import _gone

LAYOUT = Path(__file__).resolve().parents[1] / "fixtures" / "layout"
T = TypeVar("T")
FORCED = ReadOffload(min_bytes=0)  # a child for any ingest of two files or more
ON_THREADS = ReadOffload(enabled=False)


@pytest.fixture(name="env")
async def env_fixture(tmp_path: Path) -> AsyncIterator[Env]:
    async with open_env(tmp_path / "stack") as env:
        yield env


def _unreadable(folder: Path) -> None:
    """Files every reading refuses, each its own way."""
    (folder / "empty.md").write_text("   \n\n", encoding="utf-8")  # no indexable text
    (folder / "garbage.docx").write_bytes(b"PK\x03\x04 not a zip at all" * 40)
    (folder / "garbage.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00\xff" * 500)
    (folder / "table.xyz").write_text("unsupported", encoding="utf-8")


def _corpus(root: Path) -> Path:
    """The sample corpus (its Bible table too, one book embedded), some layout fixtures, and
    files that cannot be read."""
    folder = root / "corpus"
    shutil.copytree(SAMPLES_DIR, folder)
    layout = folder / "layout"
    layout.mkdir()
    for name in (
        "message-pandoc.docx",
        "message-libreoffice.epub",
        "message-typst.pdf",
        "outline-pandoc.docx",
        "mixed-scan.pdf",
        "encrypted.docx",
        "old-outline.doc",
    ):
        shutil.copy(LAYOUT / name, layout / name)
    _unreadable(folder)
    return folder


def _without_time(value: Any) -> Any:
    return dataclasses.replace(value, ingested_at="")


async def _outcome(env: Env, summary: IngestSummary, root: Path) -> dict[str, Any]:
    """Everything an ingest leaves: its summary, the registry, every chunk in the store."""
    chunks = await env.store.scroll(None, limit=100_000)
    return {
        "summary": (summary.documents, summary.chunks, summary.refs, summary.concepts),
        "unchanged": summary.unchanged,
        "verses": summary.verses,
        "skipped": [(p.relative_to(root), reason) for p, reason in summary.skipped],
        "problems": [(p.relative_to(root), type(e), e.zh, e.en) for p, e in summary.problems],
        "results": [(p.relative_to(root), doc_id, report) for p, doc_id, report in summary.results],
        "records": sorted(
            (_without_time(r) for r in await env.indexer.documents()), key=lambda r: r.doc_id
        ),
        "chunks": sorted((_without_time(c) for c in chunks), key=lambda c: c.id),
    }


class Patient(ReadProcess):
    """Sends every piece of work to the child, waiting for it to be warm (the pipeline's does
    the first files here meanwhile): what the child reads is then all of it."""

    async def __call__(self, work: Callable[[], T]) -> T:
        await self.start()
        return await super().__call__(work)


async def test_an_ingest_in_a_process_indexes_exactly_what_one_on_threads_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ingest.pipeline.ReadProcess", Patient)
    folder = _corpus(tmp_path)
    outcomes = []
    for name, reading in (("threads", ON_THREADS), ("process", FORCED)):
        async with open_env(tmp_path / name) as env:
            pipeline = Pipeline(env.indexer, embed_books=["Jude"], reading=reading)
            summary = await pipeline.ingest_paths([folder])
            outcomes.append(await _outcome(env, summary, tmp_path))
            if reading is FORCED:
                reader = pipeline.reader
                # all the reading: each file loaded, each document loaded (not a refusal)
                # and new as read chunked; the Bible table is read here, whatever the reader
                assert reader is not None and reader.served == 46
                assert len(reader.pids) == 1 and _gone(reader.pids[0])  # and ended with it
            else:
                assert pipeline.reader is None
    threads, process = outcomes
    assert threads["summary"][0] >= 20 and len(threads["chunks"]) > 100
    assert {p.name for p, *_ in threads["problems"]} >= {
        "empty.md",
        "garbage.docx",
        "garbage.pdf",
        "table.xyz",
        "mixed-scan.pdf",
        "encrypted.docx",
        "old-outline.doc",
    }
    for key in threads:
        assert process[key] == threads[key], key


def _counting(
    encode: Callable[[Sequence[Chunk]], list[SparseVector]], counts: list[int]
) -> Callable[[Sequence[Chunk]], list[SparseVector]]:
    def counted(chunks: Sequence[Chunk]) -> list[SparseVector]:
        counts.append(len(chunks))
        return encode(chunks)

    return counted


async def test_the_keyword_vectors_cut_in_the_process_are_the_ones_cut_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the bot's kind of keyword encoder (a `Tokenizer` with its own terms, given as a
    set), the reading process cuts each chunk's keyword vector: the keyword index is the
    one an ingest on threads builds, and no chunk was cut again here."""
    monkeypatch.setattr("ingest.pipeline.ReadProcess", Patient)
    folder = _corpus(tmp_path)
    # words jieba cuts in two unless given (the samples name each many times)
    terms = {"终极完成", "内住基督", "生命长大", "召会建造", "福音祭司", "更新变化"}
    queries = ["终极完成的新耶路撒冷", "内住基督 生命长大", "福音祭司 召会建造", "弗一10 经纶"]
    found = []
    for name, reading in (("threads", ON_THREADS), ("process", FORCED)):
        encoder = Bm25Encoder(Tokenizer(terms=terms))
        async with open_env(tmp_path / name, encoder) as env:
            pipeline = Pipeline(env.indexer, embed_books=["Jude"], reading=reading)
            cut_here: list[int] = []
            monkeypatch.setattr(env.indexer, "_encode", _counting(env.indexer._encode, cut_here))
            await pipeline.ingest_paths([folder])
            ranked: dict[str, dict[str, float]] = {}
            for q in queries:
                # every chunk that holds a word of it, so ties at a cut-off cannot differ
                hits = await env.store.search_sparse(encoder.encode_query(q), limit=10_000)
                ranked[q] = {h.chunk.id: h.score for h in hits}
            found.append(ranked)
            if reading is FORCED:
                # only the Bible book (read here whatever the reader) was cut in this process
                assert 0 < sum(cut_here) <= 25, cut_here
            else:
                assert sum(cut_here) > 100
    threads, process = found
    assert all(threads[q] for q in queries)
    for q in queries:  # the store sums float32 weights: the same vectors, scores to a tolerance
        assert process[q].keys() == threads[q].keys(), q
        assert process[q] == pytest.approx(threads[q], rel=1e-5), q


def _every_file(unreadable: Path) -> Iterator[Path]:
    yield from sorted(p for p in SAMPLES_DIR.iterdir() if p.suffix in (".md", ".txt"))
    yield from sorted(p for p in LAYOUT.iterdir() if p.suffix != ".py" and p.name != "truth.json")
    yield from sorted(unreadable.iterdir())


async def test_each_file_reads_the_same_in_the_process_as_on_a_thread(tmp_path: Path) -> None:
    """Every sample and layout fixture, reading alone: the same document, metadata, hash,
    chunks, or the same refusal."""
    _unreadable(tmp_path)
    reader = ReadProcess()
    await reader.start()

    async def read(where: Any, path: Path) -> tuple[Any, ...]:
        prepare = functools.partial(
            prepare_document, path, DocMeta(), max_bytes=10**8, tagger_key="k"
        )
        try:
            prepared = await where(prepare)
            built: Built = await where(functools.partial(_finish, prepared, "corpus", _untagged))
        except LoadError as refused:
            return (type(refused), refused.zh, refused.en)
        return (prepared, _without_time(built.record), [_without_time(c) for c in built.chunks])

    try:
        files = list(_every_file(tmp_path))
        for path in files:
            assert await read(reader, path) == await read(in_thread, path), path.name
    finally:
        await reader.close()
    assert reader.served >= len(files) and _gone(reader.pids[0])


def _small_corpus(folder: Path, documents: int) -> Path:
    folder.mkdir()
    for n in range(documents):
        paragraphs = [
            f"第{n}篇第{p}段：神圣的分赐使召会得以建造，圣徒在生命中长大。" for p in range(3)
        ]
        text = f"# 第{n}篇\n\n" + "\n\n".join(paragraphs) + "\n"
        (folder / f"message-{n:02d}.md").write_text(text, encoding="utf-8")
    return folder


async def test_a_reading_process_killed_mid_ingest_costs_at_most_the_file_it_held(
    env: Env, tmp_path: Path
) -> None:
    """Killed, warm, as the first file is about to be indexed, while reading runs at most 17
    files ahead of 24: the file it held (if it held one) is skipped with a reason, the rest is
    read (here while a new child starts, then there), and the next ingest adds the skipped
    file and leaves the others as they are."""
    folder = _small_corpus(tmp_path / "corpus", 24)
    killed: list[int] = []

    async def kill_it_once(record: DocumentRecord, chunks: int) -> None:
        reader = pipeline.reader
        if not killed and reader is not None:
            await reader.start()  # (warm: it is reading)
            killed.append(reader.pids[-1])
            os.kill(killed[0], signal.SIGKILL)

    pipeline = Pipeline(env.indexer, reading=FORCED, admit=kill_it_once)
    summary = await pipeline.ingest_paths([folder])
    reader = pipeline.reader
    assert reader is not None and len(reader.pids) <= 2 and reader.pids[0] == killed[0]
    assert all(_gone(pid) for pid in reader.pids)
    assert summary.documents + len(summary.skipped) == 24 and len(summary.skipped) <= 1
    for path, reason in summary.skipped:
        assert reason == (
            "读取此文件的子进程意外退出（被信号 9 终止），文件未导入；请重新导入 (the process "
            "reading this file stopped (killed by signal 9); it was not ingested: ingest it again)"
        ), path
    again = await Pipeline(env.indexer, reading=FORCED).ingest_paths([folder])
    assert (again.documents, again.unchanged, again.skipped) == (
        len(summary.skipped),
        summary.documents,
        [],
    )


async def test_the_reading_process_ends_with_a_cancelled_ingest(env: Env, tmp_path: Path) -> None:
    """Cancelled as the first file is about to be indexed, the child warm and reading ahead."""
    folder = _small_corpus(tmp_path / "corpus", 24)
    task: asyncio.Future[IngestSummary] | None = None

    async def cancel(record: DocumentRecord, chunks: int) -> None:
        assert pipeline.reader is not None and task is not None
        await pipeline.reader.start()
        task.cancel()

    pipeline = Pipeline(env.indexer, reading=FORCED, admit=cancel)
    task = asyncio.ensure_future(pipeline.ingest_paths([folder]))
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pipeline.reader is not None and len(pipeline.reader.pids) == 1
    assert _gone(pipeline.reader.pids[0])


async def test_small_ingests_and_the_setting_read_on_threads(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One file (a chat's upload), or a few small ones, read here; `INGEST_READ_PROCESS=false`
    (`run_ingest(read_process=False)`) reads a large ingest here too."""
    made: list[ReadProcess] = []

    class Recorded(ReadProcess):
        def __init__(self, warm: Callable[[], object]) -> None:
            super().__init__(warm)
            made.append(self)

    monkeypatch.setattr("ingest.pipeline.ReadProcess", Recorded)
    small = _small_corpus(tmp_path / "small", 3)
    await Pipeline(env.indexer).ingest_paths([small])
    await Pipeline(env.indexer).ingest_paths([LAYOUT / "joseph-short-weasyprint.pdf"])
    assert made == []

    large = tmp_path / "large"
    large.mkdir()
    for name in ("message-weasyprint.pdf", "ruth-weasyprint.pdf"):  # 734 KB
        shutil.copy(LAYOUT / name, large / name)
    parser = argparse.ArgumentParser()
    add_ingest_arguments(parser)
    args = parser.parse_args([str(large)])
    assert await run_ingest(env.indexer, args, read_process=False) == 0
    assert made == []
    await env.indexer.delete_documents(await env.indexer.documents())
    assert await run_ingest(env.indexer, args) == 0
    assert len(made) == 1 and len(made[0].pids) == 1  # a child was started (and used if ready)


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.settings import Settings

    assert Settings().ingest_read_process is True
    monkeypatch.setenv("INGEST_READ_PROCESS", "false")
    assert Settings().ingest_read_process is False
