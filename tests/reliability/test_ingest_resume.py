"""`baibao ingest` through an embedding server, SIGKILLed in the middle, then run again (issue 40).

The ingest reads ahead of what it indexes and keeps several batches in flight, so a kill lands
while some documents are indexed, some are half-way (their vectors back, not yet written) and
some are still being read. The kill is placed by progress, not by a clock: the loopback
embeddings server answers every batch but those of document `HELD`, which it holds; the ingest
(the product's pipeline in a child, `helpers/ingest_child.py`, printing each file it is done
with) indexes the documents before it, reads and embeds a few after it, and waits. The test
kills it once the documents before `HELD` are done. Then `baibao ingest` runs to the end:

- nothing is lost: every document is registered once, with all its chunks in the store and no
  point the registry does not name;
- nothing finished is done again: the documents registered before the kill are reported
  unchanged, keep their generation, and none of their text is sent to the server again;
- no vector is paid for twice: no text whose vector was kept before the kill (the embedding
  cache) is sent again.

The store runs on threads in the ingest process (`QDRANT_EDGE_PROCESS=false`), so the kill
takes the whole stack at once (with a store process of its own, the orphaned child would still
be flushing while the second run starts). The ingest reads on its threads, or in a process of
its own (`ingest.read_process`), which the kill takes too: no reading process outlives it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.settings import load_settings
from retrieval.types import Filter
from tests.reliability.helpers.processes import exited
from tests.stubs.embeddings_server import EmbeddingsServer

ROOT = Path(__file__).resolve().parents[2]
DOCS = 12
HELD = 5  # the document whose batches the server holds (files are read in name order)
DIM = 64
MARK = re.compile(r"文档(\d\d)号")


def _write_corpus(folder: Path) -> None:
    folder.mkdir()
    for n in range(DOCS):
        paragraphs = [
            f"文档{n:02d}号第{p}段：神圣的分赐使召会得以建造，圣徒在生命中长大，彼此供应基督。"
            * (2 + (n + p) % 3)
            for p in range(6 + n % 4)
        ]
        text = f"# 第{n}篇信息\n\n" + "\n\n".join(paragraphs) + "\n"
        (folder / f"message-{n:02d}.md").write_text(text, encoding="utf-8")


def _env(data: Path, url: str) -> dict[str, str]:
    # ROOT for `-m tests.…`, after whatever the suite put first (its network block for children).
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p)
    return {
        **os.environ,
        "PYTHONPATH": path,
        "DATA_DIR": str(data),
        "SAMPLE_CORPUS": "false",
        "LLM_PROVIDER": "none",
        "EMBEDDING_PROVIDER": "openai",
        "EMBEDDING_BASE_URL": url,
        "EMBEDDING_MODEL": "stub-embed",
        "EMBEDDING_DIMENSIONS": str(DIM),
        "EMBEDDING_CONCURRENCY": "4",
        "QDRANT_EDGE_PROCESS": "false",
    }


async def _run(module: str, *args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _files_done(child: asyncio.subprocess.Process, count: int) -> list[str]:
    """The child's lines until it has said `count` files are done (or it ended)."""
    assert child.stdout is not None
    lines: list[str] = []
    while sum(line.startswith("FILE ") for line in lines) < count:
        line = (await child.stdout.readline()).decode()
        if not line:
            break
        lines.append(line.strip())
    return lines


def _docs_of(inputs: list[str]) -> set[int]:
    return {int(m.group(1)) for text in inputs for m in MARK.finditer(text)}


def _registered(db: Path) -> dict[str, int]:
    """doc_id → generation, of the documents the registry names."""
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT doc_id, gen FROM corpus_documents").fetchall())


def _cached(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {row[0] for row in conn.execute("SELECT content_hash FROM embed_cache")}


def _children(pid: int) -> dict[int, bytes]:
    """The child processes of `pid`, with their command lines."""
    pids = [
        int(child)
        for children in Path(f"/proc/{pid}/task").glob("*/children")
        for child in children.read_text().split()
    ]
    return {child: Path(f"/proc/{child}/cmdline").read_bytes() for child in pids}


@pytest.mark.parametrize("reading", ["threads", "process"])
async def test_a_sigkill_mid_ingest_loses_nothing_and_repeats_no_finished_document(
    tmp_path: Path, reading: str
) -> None:
    corpus, data = tmp_path / "corpus", tmp_path / "data"
    _write_corpus(corpus)
    db = data / "baibao.sqlite3"
    release = asyncio.Event()
    mark = f"文档{HELD:02d}号"

    async def hold_one_document(body: dict[str, Any]) -> None:
        if any(mark in text for text in body["input"]):
            await release.wait()  # never answered: the process is killed meanwhile

    async with EmbeddingsServer(default_dim=DIM) as server:
        server.hold = hold_one_document
        env = _env(data, server.base_url)
        flags = ["--read-process"] if reading == "process" else []
        first = await _run("tests.reliability.helpers.ingest_child", str(corpus), *flags, env=env)
        lines = await _files_done(first, HELD)
        if lines != [f"FILE message-{n:02d}.md" for n in range(HELD)]:
            first.kill()
            raise AssertionError((lines, (await first.communicate())[1].decode()[-3000:]))
        readers = _children(first.pid)  # the store runs on its threads: any child reads
        first.send_signal(signal.SIGKILL)
        assert await first.wait() == -signal.SIGKILL
        assert len(readers) == (1 if reading == "process" else 0), readers
        assert all(b"ingest.read_process" in command for command in readers.values())
        for pid in readers:
            await exited(pid)  # it died with its parent: no orphan reading on

        finished = _registered(db)
        kept = _cached(db)
        assert len(finished) == HELD, finished  # the documents before the held one
        asked_before = len(server.requests)
        server.hold = None  # the server answers everything now
        release.set()

        second = await _run("bot.cli", "ingest", str(corpus), env=env)
        out, err = await second.communicate()
        assert second.returncode == 0, err.decode()[-3000:]
        summary = out.decode()
        assert f"{len(finished)} 个未变 unchanged" in summary, summary
        assert f"{DOCS - len(finished)} 个文档 documents" in summary, summary

        resent = [text for r in server.requests[asked_before:] for text in r["input"]]
        first_inputs = [text for r in server.requests[:asked_before] for text in r["input"]]
        assert max(_docs_of(first_inputs)) > HELD  # it read and embedded ahead of the held one
        hashes = {hashlib.sha256(t.encode("utf-8")).hexdigest() for t in resent}
        assert not hashes & kept  # no vector kept before the kill was paid for again

        registered = _registered(db)
        assert len(registered) == DOCS
        assert all(registered[d] == gen for d, gen in finished.items())  # not indexed again
        settings = load_settings(
            data_dir=data,
            embedding_provider="openai",
            embedding_base_url=server.base_url,
            embedding_model="stub-embed",
            embedding_dimensions=DIM,
            qdrant_edge_process=False,
            sample_corpus=False,
        )
        async with App(settings, llm=None) as app:
            docs = await app.indexer.documents()
            finished_paths = {d.path for d in docs if d.doc_id in finished}
            finished_numbers = {int(Path(p).stem.split("-")[1]) for p in finished_paths}
            assert not _docs_of(resent) & finished_numbers  # no finished document resent
            points = await app.store.count(Filter(equals={"namespace": "corpus"}))
            assert points == sum(d.chunk_count for d in docs) > 0  # nothing lost, no orphan
            report = await app.indexer.reconcile()
            assert report.points_deleted == 0 and report.graphs_rebuilt == 0
