"""Ingest end to end on real components: Qdrant Edge, SQLite (Indexer + graph), BM25, the
hash embedder; files generated here plus a slice of the bundled CUV table."""

from __future__ import annotations

import argparse
import gzip
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from ingest.cli import add_ingest_arguments, run_ingest
from ingest.pipeline import IngestProgress, Pipeline
from ingest.samples import CUV_TABLE
from retrieval.fakes import HashEmbedder
from retrieval.graph import KnowledgeGraph
from retrieval.index import Indexer
from retrieval.keyword import Bm25Encoder
from retrieval.search import HybridSearch
from retrieval.store.edge import EdgeStore
from retrieval.synonyms import SynonymTable
from retrieval.types import Filter

DIM = 64

MESSAGE = """# 第一篇　灯台与金油

## 一　灯台的异象

撒迦利亚看见一个纯金的灯台，顶上有灯盏，旁边有两棵橄榄树（亚四2–3）。灯台表征召会是神的见证，金油表征那灵的供应。

## 二　金油的流出

橄榄树藉着金嘴流出金油，灯台就发光。我们里面的灵接受供应，就能照亮周围的人。
"""

OUTLINE = """属灵的呼吸
壹　呼求主名是属灵的呼吸
一、呼出里面的污浊——罗十12
二、吸入那灵的丰富
（一）每天多次呼求
贰　祷读主话
"""


@dataclass
class Env:
    indexer: Indexer
    search: HybridSearch
    embedder: HashEmbedder
    store: EdgeStore


@asynccontextmanager
async def open_env(root: Path, encoder: Bm25Encoder | None = None) -> AsyncIterator[Env]:
    """The real stack under `root` (`encoder`: the keyword encoder, jieba's default one
    unless given)."""
    store = await EdgeStore.open(root / "qdrant", DIM)
    graph = await KnowledgeGraph.open(root / "db.sqlite3")
    embedder = HashEmbedder(DIM)
    encoder = encoder or Bm25Encoder()
    try:
        async with Indexer(root / "db.sqlite3", store, embedder, encoder, graph) as ix:
            search = HybridSearch(store, embedder, encoder, graph.query, SynonymTable.load())
            yield Env(ix, search, embedder, store)
    finally:
        await graph.close()
        await store.close()


@pytest.fixture(name="env")
async def env_fixture(tmp_path: Path) -> AsyncIterator[Env]:
    """The real stack (also used by tests/e2e/test_ingest_formats.py and
    tests/e2e/test_ingest_read_process.py)."""
    async with open_env(tmp_path) as env:
        yield env


def _corpus(root: Path) -> Path:
    folder = root / "corpus"
    (folder / "sub").mkdir(parents=True)
    (folder / "lamp.md").write_text(MESSAGE, encoding="utf-8")
    (folder / "sub" / "breath.txt").write_bytes(OUTLINE.encode("gb18030"))
    (folder / ".hidden.md").write_text("# 隐藏\n\n不应导入。", encoding="utf-8")
    (folder / "manifest.toml").write_text(
        '[[documents]]\nfile = "lamp.md"\ntitle = "灯台与金油"\nauthor = "示例作者"\n'
        'year = 1980\nera = "sample-1980s"\n',
        encoding="utf-8",
    )
    return folder


async def _texts(env: Env, query: str, limit: int = 10) -> list[str]:
    result = await env.search.search(query, limit=limit)
    return [h.chunk.text for h in result.hits]


async def test_ingest_folder_then_search_reingest_modify_delete(env: Env, tmp_path: Path) -> None:
    folder = _corpus(tmp_path)
    seen: list[IngestProgress] = []
    pipeline = Pipeline(env.indexer)
    summary = await pipeline.ingest_paths([folder], on_progress=seen.append)
    assert summary.skipped == []
    assert summary.documents == 2 and summary.unchanged == 0
    assert summary.chunks == 2 + 1 and summary.refs >= 3  # the outline is one unit
    assert seen[-1].files_done == 2 and seen[-1].chunks_done == summary.chunks

    docs = {d.source: d for d in await env.indexer.documents()}
    # A text file carries no title: the outline is named by its file (its 主题 line heads the paths)
    assert set(docs) == {"灯台与金油", "breath"}
    lamp = docs["灯台与金油"]
    assert (lamp.type, lamp.author, lamp.year, lamp.era) == (
        "message",
        "示例作者",
        1980,
        "sample-1980s",
    )
    assert docs["breath"].type == "outline"

    hits = (await env.search.search("金油的供应", limit=3)).hits
    assert hits and hits[0].chunk.source == "灯台与金油"
    chunk = hits[0].chunk
    assert chunk.chapter.startswith("第一篇　灯台与金油 > ")
    assert chunk.era == "sample-1980s" and chunk.language == "zh"
    outline_hits = await env.store.scroll(Filter(equals={"type": "outline"}))
    paths = {c.extra.get("path") for c in outline_hits}
    # 贰 is a bare point: it shares 壹's chunk, labelled with the path both share (the
    # outline itself), so neither point is cited under the other's heading
    assert paths == {"属灵的呼吸"}
    assert outline_hits[0].chapter == "" and outline_hits[0].text.endswith("贰　祷读主话")
    assert "一、呼出里面的污浊——罗十12" in outline_hits[0].text
    assert any("Rom.10.12" in c.scripture_refs for c in outline_hits)

    # re-ingest: unchanged, no embedding calls
    calls = env.embedder.calls
    again = await pipeline.ingest_paths([folder])
    assert (again.documents, again.unchanged, again.chunks) == (0, 2, 0)
    assert env.embedder.calls == calls

    # modify a file: replaced, the old text is never retrieved again
    (folder / "lamp.md").write_text(
        MESSAGE.replace("撒迦利亚看见一个纯金的灯台", "先知看见七个金灯台在荒野中"),
        encoding="utf-8",
    )
    changed = await pipeline.ingest_paths([folder])
    assert (changed.documents, changed.unchanged) == (1, 1)
    stored = await env.store.scroll(Filter(equals={"source": "灯台与金油"}))
    assert len(stored) == 2
    assert not any("撒迦利亚" in c.text for c in stored)
    assert not any("撒迦利亚" in t for t in await _texts(env, "撒迦利亚看见纯金的灯台"))
    assert any("七个金灯台" in t for t in await _texts(env, "七个金灯台"))

    # --delete through the CLI: nothing of it is retrieved (it waits in the trash)
    parser = argparse.ArgumentParser()
    add_ingest_arguments(parser)
    assert await run_ingest(env.indexer, parser.parse_args(["--delete", "灯台与金油"])) == 0
    live = Filter(equals={"source": "灯台与金油", "namespace": "corpus"})
    assert await env.store.count(live) == 0
    assert [r.source for r in await env.indexer.trash()] == ["灯台与金油"]
    assert not any("灯台" in t for t in await _texts(env, "灯台 金油 七个金灯台"))
    assert [d.source for d in await env.indexer.documents()] == ["breath"]
    assert await run_ingest(env.indexer, parser.parse_args(["--delete", "灯台与金油"])) == 1


async def test_bad_files_are_skipped_with_reasons_others_indexed(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _corpus(tmp_path)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 4)
    (folder / "fake.epub").write_text("not a zip", encoding="utf-8")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "image.png").write_bytes(b"\x89PNG\r\n")
    with (folder / "huge.md").open("wb") as fh:
        fh.truncate(3 * 1024 * 1024)
    parser = argparse.ArgumentParser()
    add_ingest_arguments(parser)
    args = parser.parse_args([str(folder), "--max-size-mb", "2"])
    assert await run_ingest(env.indexer, args) == 1  # some files were skipped
    out = capsys.readouterr()
    skipped = [line for line in out.out.splitlines() if line.startswith("跳过 skipped:")]
    assert len(skipped) == 5
    reasons = "\n".join(skipped)
    for name, why in [
        ("broken.pdf", "PDF"),
        ("fake.epub", "not a zip"),
        ("empty.txt", "empty file"),
        ("image.png", "unsupported file type"),
        ("huge.md", "文件过大"),
    ]:
        assert any(name in line and why in line for line in skipped), (name, reasons)
    assert "2 个文档 documents" in out.out
    assert "块/秒" in out.err  # the progress bar
    assert {d.source for d in await env.indexer.documents()} == {"灯台与金油", "breath"}
    for name in ("broken", "fake", "empty", "image", "huge"):
        assert await env.store.count(Filter(equals={"source": name})) == 0

    assert await run_ingest(env.indexer, parser.parse_args(["--list"])) == 0
    table = capsys.readouterr().out
    assert "来源 source" in table and "breath" in table and "outline" in table
    assert "breath.txt" in table and "lamp.md" in table  # the file each came from


async def test_bible_table_verses_and_chosen_books(env: Env, tmp_path: Path) -> None:
    # A slice of the real CUV table: Ephesians + Colossians + Philemon (with merged verses kept).
    with gzip.open(CUV_TABLE, "rt", encoding="utf-8") as fh:
        lines = [ln for ln in fh if ln.split("\t", 1)[0] in ("book", "Eph", "Col", "Phlm")]
    path = tmp_path / "slice.tsv.gz"
    path.write_bytes(gzip.compress("".join(lines).encode("utf-8")))
    pipeline = Pipeline(env.indexer, embed_books=["Eph"])
    summary = await pipeline.ingest_paths([path])
    assert summary.skipped == []
    rows = [ln.rstrip("\n").split("\t") for ln in lines[1:]]
    with_text = [r for r in rows if r[3].strip()]
    assert len(with_text) < len(rows)  # merged verses (empty text) are in the slice
    assert summary.verses == len(with_text)
    assert summary.chunks == sum(1 for r in with_text if r[0] == "Eph")  # Ephesians only
    verses = await env.indexer.verses(["Col.1.15", "Eph.1.10"])
    assert [v.osis for v in verses] == ["Col.1.15", "Eph.1.10"]
    hit = (await env.search.search("弗1:10 在基督里同歸於一", limit=3)).hits[0].chunk
    assert hit.type == "bible" and hit.scripture_refs == ("Eph.1.10",)
    assert hit.chapter == "以弗所书 1" and hit.source == "和合本（1919）"
    assert await env.store.count(Filter(equals={"doc_id": "bible-cuv1919-Col"})) == 0
    again = await pipeline.ingest_paths([path])
    assert again.unchanged == 3 and again.chunks == 0


async def test_sample_corpus_first_run_only(env: Env) -> None:
    from ingest.samples import ensure_sample_corpus

    summary = await ensure_sample_corpus(env.indexer, ["Col"])
    assert summary is not None and summary.skipped == []
    assert summary.verses > 31000
    sources = {d.source for d in await env.indexer.documents()}
    assert {
        "新约职事",
        "以弗所书注解（示例）",
        "The Divine Dispensing and the Church Life",
    } <= sources
    assert await env.store.count(Filter(equals={"type": "bible"})) == 94  # Colossians (one merged)
    footnote = await env.store.scroll(
        Filter(equals={"type": "footnote", "scripture_refs": "Eph.1.10"})
    )
    assert footnote and all(c.chapter for c in footnote)
    calls = env.embedder.calls
    assert await ensure_sample_corpus(env.indexer, ["Col"]) is None
    assert env.embedder.calls == calls


class FailingEmbedder(HashEmbedder):
    """A real embedder that fails on one marked passage (an outage mid-document)."""

    async def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        if any("BOOM" in t for t in texts):
            raise ConnectionError("embedding service went away")
        return await super().embed_passages(texts)


async def test_failure_mid_document_leaves_nothing_of_it(tmp_path: Path) -> None:
    store = await EdgeStore.open(tmp_path / "qdrant", DIM)
    graph = await KnowledgeGraph.open(tmp_path / "db.sqlite3")
    embedder = FailingEmbedder(DIM)
    try:
        async with Indexer(tmp_path / "db.sqlite3", store, embedder, Bm25Encoder(), graph) as ix:
            folder = tmp_path / "docs"
            folder.mkdir()
            points = [f"{i}. 第{i}个要点，说到属灵的呼吸" for i in range(1, 41)]
            points[36] = "37. BOOM 这一点让嵌入失败"
            (folder / "long.txt").write_text("很长的纲目\n" + "\n".join(points), encoding="utf-8")
            (folder / "lamp.md").write_text(MESSAGE, encoding="utf-8")
            summary = await Pipeline(ix).ingest_paths([folder])
            assert [p.name for p, _ in summary.skipped] == ["long.txt"]
            assert "索引失败" in summary.skipped[0][1] and "went away" in summary.skipped[0][1]
            assert summary.documents == 1
            assert await store.count(Filter(equals={"source": "long"})) == 0
            # 第一篇… is a chapter heading, never a title: the file name is
            assert [d.source for d in await ix.documents()] == ["lamp"]
    finally:
        await graph.close()
        await store.close()


async def test_two_files_with_one_title_second_is_skipped(env: Env, tmp_path: Path) -> None:
    folder = tmp_path / "dup"
    folder.mkdir()
    (folder / "a.md").write_text("# 同一个标题\n\n第一份文字。", encoding="utf-8")
    (folder / "b.md").write_text("# 同一个标题\n\n第二份文字。", encoding="utf-8")
    summary = await Pipeline(env.indexer).ingest_paths([folder])
    assert summary.documents == 1
    assert [(p.name, "same title as a.md" in r) for p, r in summary.skipped] == [("b.md", True)]
    stored = await env.store.scroll(Filter(equals={"source": "同一个标题"}))
    assert [c.text for c in stored] == ["第一份文字。"]


BOOKS = Path(__file__).resolve().parents[1] / "fixtures" / "books"


async def test_book_files_without_manifest_are_titled_by_file_and_deletable(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new user's files: a book whose first line is `第一章 …`, a GBK file, no manifest.
    Titles come from the file names; `--delete` takes the title, the id, the file name, the
    name without extension or the path."""
    folder = tmp_path / "mine"
    folder.mkdir()
    life = folder / "生命的经历.txt"
    life.write_bytes((BOOKS / "生命的经历.txt").read_bytes())
    gbk = folder / "gbk_test.txt"
    gbk.write_bytes((BOOKS / "神的经纶.txt").read_text(encoding="utf-8").encode("gbk"))
    parser = argparse.ArgumentParser()
    add_ingest_arguments(parser)
    assert await run_ingest(env.indexer, parser.parse_args([str(folder)])) == 0
    docs = {d.source: d for d in await env.indexer.documents()}
    assert set(docs) == {"生命的经历", "gbk_test"}
    assert docs["生命的经历"].type == "book"  # three 第X章 chapters
    chunks = await env.store.scroll(Filter(equals={"source": "生命的经历"}))
    assert {c.chapter for c in chunks} >= {"第一章 生命的经历与生命的长大", "第三章 生命的成熟"}
    capsys.readouterr()

    assert await run_ingest(env.indexer, parser.parse_args(["--list"])) == 0
    listed = capsys.readouterr().out
    assert "生命的经历.txt" in listed and "gbk_test.txt" in listed

    for key in ("gbk_test", "生命的经历.txt"):  # name without extension; file name
        assert await run_ingest(env.indexer, parser.parse_args(["--delete", key])) == 0
    assert await env.indexer.documents() == []
    assert await env.store.count(Filter(equals={"namespace": "corpus"})) == 0

    await run_ingest(env.indexer, parser.parse_args([str(folder)]))
    doc_id = next(d.doc_id for d in await env.indexer.documents() if d.source == "gbk_test")
    for key in (str(life), doc_id):  # the path; the id
        assert await run_ingest(env.indexer, parser.parse_args(["--delete", key])) == 0
    assert await env.indexer.documents() == []
    capsys.readouterr()
    assert await run_ingest(env.indexer, parser.parse_args(["--delete", "gbk_test"])) == 1
    assert "找不到文档" in capsys.readouterr().err


async def test_a_file_name_two_folders_share_deletes_nothing(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, text in (("a", "甲处的笔记，说到生命的长大。"), ("b", "乙处的笔记，说到召会生活。")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "notes.md").write_text(f"# 笔记{name}\n\n{text}", encoding="utf-8")
    await Pipeline(env.indexer).ingest_paths([tmp_path / "a", tmp_path / "b"])
    parser = argparse.ArgumentParser()
    add_ingest_arguments(parser)
    capsys.readouterr()
    assert await run_ingest(env.indexer, parser.parse_args(["--delete", "notes.md"])) == 1
    err = capsys.readouterr().err
    assert "笔记a" in err and "笔记b" in err
    assert len(await env.indexer.documents()) == 2
    assert await run_ingest(env.indexer, parser.parse_args(["--delete", "笔记a"])) == 0
    assert [d.source for d in await env.indexer.documents()] == ["笔记b"]


async def test_a_file_ingested_again_under_a_new_title_replaces_its_old_self(
    env: Env, tmp_path: Path
) -> None:
    path = tmp_path / "生命的经历.txt"
    path.write_bytes((BOOKS / "生命的经历.txt").read_bytes())
    parser = argparse.ArgumentParser()
    add_ingest_arguments(parser)
    await run_ingest(env.indexer, parser.parse_args([str(path), "--title", "旧标题"]))
    assert [d.source for d in await env.indexer.documents()] == ["旧标题"]
    await run_ingest(env.indexer, parser.parse_args([str(path)]))
    assert [d.source for d in await env.indexer.documents()] == ["生命的经历"]
    assert await env.store.count(Filter(equals={"source": "旧标题"})) == 0
