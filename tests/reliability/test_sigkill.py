"""SIGKILL at random points while ingesting documents or revising chapters, then recovery.

A child process (`helpers/sigkill_child.py`) opens the real storage stack (Qdrant Edge + SQLite,
`HashEmbedder`) on a data directory that persists across runs and mutates it in a loop; the
parent kills it with SIGKILL after `random.uniform(0, WINDOW)` seconds, re-opens the components
(which reconcile on start-up, as `App` does) and checks the invariants:

- exactly one current version per document / chapter (one registry row, one generation of
  points; for chapters every stored chunk is of the SQLite-current version, marked current);
- no orphan chunks (points of a generation / version / document SQLite does not record);
- no missing chunks (the current version's point count equals its chunk count);
- search never returns stale text (every hit carries the current version's marker).

A second campaign kills the writers' room during revisions of one chapter whose every version
changes the story state (a new name, 林远's place, 霍三 hurt or dead): after the restart the
chapter's current version is the old one or the interrupted revision's, its versions are the
completed ones (plus that revision, if it committed), its plot memory is that version's alone,
and the story state is the replay of the current chapters — that version's facts, its pending
proposals only (never the old version's name alongside the new one's).

A third campaign kills the library's trash operations (a delete to the trash, a restore, a
purge): after the restart every document is in exactly one place — live, in the trash or
gone — whole, with no graph rows of a purged document left and nothing pending.

`BAIBAO_SIGKILL_RUNS` (default 20) sets the number of kills, alternating corpus / novel (the
story campaign makes a quarter as many, the trash campaign half).
The campaign's seed (kill delays, the children's operations) is the run's own seed, the one
pytest prints and `.ci/run` passes: pytest-randomly's `--randomly-seed`, else
`--hypothesis-seed`; `BAIBAO_SIGKILL_SEED` overrides both. A failure names the seed and the
command that replays it. (The kill lands after the same delay, not at the same instruction: a
replay repeats the schedule, the machine's timing decides the rest.)
Deterministic kills at each step boundary live in `test_crash_points.py`.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.helpers.sigkill_child import (
    CHAPTERS,
    CHAT,
    DIM,
    DOCS,
    STORY_STATIC,
    CharEncoder,
    chapter_text,
    novel_service,
    sparse,
    story_facts,
    story_text,
)

ROOT = Path(__file__).resolve().parents[2]
RUNS = int(os.environ.get("BAIBAO_SIGKILL_RUNS", "20"))
STORY_RUNS = max(1, RUNS // 4)  # kills during a revision, for the story state
WINDOW_S = float(os.environ.get("BAIBAO_SIGKILL_WINDOW_S", "1.5"))
# Read at import, like the two knobs above: a fixture's environment scrub can never hide it.
SEED_OVERRIDE = os.environ.get("BAIBAO_SIGKILL_SEED")
MARK = re.compile(r"〔(.)-(\d{5})〕")


def _spawn(mode: str, data: Path, seed: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    # ROOT for `-m tests.…`, after whatever the suite put first (its network block for children).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.reliability.helpers.sigkill_child",
            mode,
            str(data),
            str(seed),
        ],
        cwd=data.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_during_ops(mode: str, data: Path, rng: random.Random) -> tuple[float, list[str]]:
    child = _spawn(mode, data, rng.randrange(1 << 30))
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if line.strip() != "READY":
            child.kill()
            _, err = child.communicate(timeout=10)
            raise AssertionError(f"child did not start: {line!r}\n{err[-3000:]}")
        delay = rng.uniform(0.0, WINDOW_S)
        time.sleep(delay)
        assert child.poll() is None, child.communicate()[1][-3000:]
        child.send_signal(signal.SIGKILL)
        # Not communicate(): it reads the pipe underneath the buffer readline() filled, and
        # the lines that arrived with READY would be lost. The child is dead: read to EOF.
        assert child.stderr is not None
        out, err = child.stdout.read(), child.stderr.read()
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    lines = out.splitlines()
    assert not [x for x in lines if x.startswith(("ERROR", "SKIPPED"))], (lines, err[-2000:])
    return delay, lines


def _kill_inside_ops(mode: str, data: Path, rng: random.Random) -> tuple[float, list[str]]:
    """Kill the child a moment (0-30 ms) after it begins one of its operations (a random one
    of its first eight): a trash operation takes milliseconds, so a kill timed from start-up
    alone seldom lands in one."""
    child = _spawn(mode, data, rng.randrange(1 << 30))
    target, delay = rng.randint(1, 8), rng.uniform(0.0, 0.03)
    lines: list[str] = []
    try:
        assert child.stdout is not None and child.stderr is not None
        begun = 0
        while begun < target:
            line = child.stdout.readline()
            if not line:
                raise AssertionError(f"child stopped: {lines}\n{child.stderr.read()[-3000:]}")
            lines.append(line.rstrip("\n"))
            begun += line.startswith("BEGIN ")
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        lines += child.stdout.read().splitlines()
        child.stderr.read()
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    return delay, [x for x in lines if x != "READY"]


# ---- corpus ---------------------------------------------------------------------------------


async def _check_library(data: Path) -> dict[str, str]:
    """After a kill in the trash campaign and the start-up reconcile: every document is in
    exactly one place — live (its points in its namespace), in the trash (its points in the
    trash), or gone (no row, no point, no graph row) — whole (one generation, every chunk, the
    registered version's text), with nothing left pending; searches find the live only."""
    from retrieval.fakes import HashEmbedder
    from retrieval.graph import KnowledgeGraph
    from retrieval.index import Indexer
    from retrieval.library import SHARED, TRASH
    from retrieval.search import HybridSearch
    from retrieval.store.edge import EdgeStore
    from retrieval.synonyms import SynonymTable
    from retrieval.types import Chunk, Filter

    db = data / "baibao.sqlite3"
    store = await EdgeStore.open(data / "qdrant", DIM)
    graph = await KnowledgeGraph.open(db)
    try:
        encoder = CharEncoder()
        async with Indexer(db, store, HashEmbedder(DIM), encoder, graph) as indexer:  # type: ignore[arg-type]
            await indexer.reconcile()  # what App does on start-up
            rows = {r["doc_id"]: r for r in await indexer._rows()}
            assert all(not r["pending"] for r in rows.values()), rows
            live = {d.doc_id: d for d in await indexer.documents()}
            trashed = {d.doc_id: d for d in await indexer.trash()}
            assert not set(live) & set(trashed) and set(live) | set(trashed) == set(rows)
            place = {**dict.fromkeys(live, SHARED), **dict.fromkeys(trashed, TRASH)}
            by_doc: dict[str, list[Chunk]] = {}
            for namespace in (SHARED, TRASH):
                flt = Filter(equals={"namespace": namespace})
                for c in await store.scroll(flt, limit=100_000):
                    assert place.get(c.doc_id) == namespace, (c.doc_id, namespace, place)
                    by_doc.setdefault(c.doc_id, []).append(c)
            for doc_id, record in {**live, **trashed}.items():
                m = re.search(r"(.)\.v(\d+)\.md$", record.path)
                assert m is not None, record.path
                current = f"〔{m.group(1)}-{int(m.group(2)):05d}〕"
                chunks = by_doc.get(doc_id, [])
                assert {int(c.extra["gen"]) for c in chunks} == {int(rows[doc_id]["gen"])}
                assert len(chunks) == record.chunk_count, (record.source, len(chunks))
                for chunk in chunks:
                    assert {f"〔{a}-{b}〕" for a, b in MARK.findall(chunk.text)} <= {current}
            contributing = {
                str(r[0])
                for r in await indexer.db.execute_fetchall(
                    "SELECT doc_id FROM graph_nodes UNION SELECT doc_id FROM graph_edges"
                    " UNION SELECT doc_id FROM graph_mentions"
                )
            }
            assert contributing - {"seed"} <= set(rows), contributing - set(rows)
            search = HybridSearch(
                store,
                HashEmbedder(DIM),
                encoder,
                graph.query,
                SynonymTable.load(),
                (1, 1, 1),  # type: ignore[arg-type]
            )
            for doc in DOCS:
                result = await search.search(f"文档{doc} 神圣的分赐 召会", limit=20)
                assert {h.chunk.doc_id for h in result.hits} <= set(live), "a deleted doc found"
            return {
                r.source: "live" if r.doc_id in live else "trash" for r in rows_of(live, trashed)
            }
    finally:
        await graph.close()
        await store.close()


async def _seed_library(data: Path) -> None:
    """The three documents the trash campaign deletes, restores and purges (version 0)."""
    from ingest.pipeline import Pipeline
    from tests.reliability.helpers.sigkill_child import corpus_text, library

    async with library(data) as indexer:
        paths = []
        for doc in DOCS:
            path = data / "src" / f"{doc}.v0.md"
            path.write_text(corpus_text(doc, 0, 6), encoding="utf-8")
            paths.append(path)
        assert (await Pipeline(indexer).ingest_paths(paths)).documents == len(DOCS)


def rows_of(*parts: dict[str, Any]) -> list[Any]:
    return [record for part in parts for record in part.values()]


async def _check_corpus(data: Path) -> dict[str, int]:
    from retrieval.fakes import HashEmbedder
    from retrieval.graph import KnowledgeGraph
    from retrieval.index import Indexer
    from retrieval.search import HybridSearch
    from retrieval.store.edge import EdgeStore
    from retrieval.synonyms import SynonymTable
    from retrieval.types import Chunk, Filter

    db = data / "baibao.sqlite3"
    store = await EdgeStore.open(data / "qdrant", DIM)
    graph = await KnowledgeGraph.open(db)
    try:
        encoder = CharEncoder()
        async with Indexer(db, store, HashEmbedder(DIM), encoder, graph) as indexer:  # type: ignore[arg-type]
            await indexer.reconcile()  # what App does on start-up
            docs = await indexer.documents()
            assert len({d.doc_id for d in docs}) == len(docs)
            current: dict[str, str] = {}  # doc_id → marker of the registered version
            for d in docs:
                m = re.search(r"(.)\.v(\d+)\.md$", d.path)
                assert m is not None, d.path
                current[d.doc_id] = f"〔{m.group(1)}-{int(m.group(2)):05d}〕"
            points = await store.scroll(Filter(equals={"namespace": "corpus"}), limit=100_000)
            by_doc: dict[str, list[Chunk]] = {}
            for c in points:
                assert c.doc_id in current, f"orphan point of unregistered document {c.doc_id}"
                by_doc.setdefault(c.doc_id, []).append(c)
            rows = {r["doc_id"]: r for r in await indexer._rows()}
            for d in docs:
                chunks = by_doc.get(d.doc_id, [])
                gens = {int(c.extra["gen"]) for c in chunks}
                assert gens == {int(rows[d.doc_id]["gen"])}, (d.source, gens, rows[d.doc_id])
                assert len(chunks) == d.chunk_count, (d.source, len(chunks), d.chunk_count)
                for chunk in chunks:
                    marks = {f"〔{a}-{b}〕" for a, b in MARK.findall(chunk.text)}
                    assert marks <= {current[d.doc_id]}, (d.source, marks, current[d.doc_id])
            search = HybridSearch(
                store,
                HashEmbedder(DIM),
                encoder,  # type: ignore[arg-type]
                graph.query,
                SynonymTable.load(),
                (0.5, 0.3, 0.2),
            )
            for doc in DOCS:
                result = await search.search(f"文档{doc} 神圣的分赐 召会", limit=20)
                for hit in result.hits:
                    for a, b in MARK.findall(hit.chunk.text):
                        assert current.get(hit.chunk.doc_id) == f"〔{a}-{b}〕", "stale text"
            return {d.source: d.chunk_count for d in docs}
    finally:
        await graph.close()
        await store.close()


# ---- novel ----------------------------------------------------------------------------------


async def _seed_novel(
    data: Path, chapters: Sequence[tuple[str, dict[str, object]]] | None = None
) -> None:
    """The novel the children revise: `chapters` (text, summary), by default CHAPTERS of
    `chapter_text`."""
    from novel.blueprint import default_blueprint
    from novel.memory import PlotMemory
    from novel.repo import Draft, NovelRepo
    from novel.summary import ChapterSummary
    from retrieval.fakes import HashEmbedder
    from retrieval.store.edge import EdgeStore

    now = datetime(2026, 11, 1, tzinfo=UTC)
    repo = await NovelRepo.open(data / "baibao.sqlite3")
    store = await EdgeStore.open(data / "qdrant", DIM)
    try:
        await repo.world.ensure_novel(CHAT, default_blueprint().to_json(), now)
        memory = PlotMemory(repo, store, HashEmbedder(DIM), sparse)
        summary: dict[str, object] = {"summary": "渡口", "characters": ["林远"]}
        default = [(chapter_text(DOCS[i], 0, 6), summary) for i in range(CHAPTERS)]
        for i, (text, said) in enumerate(chapters or default):
            await memory.add_chapter(
                chat_id=CHAT,
                chapter_id=f"ch{i + 1}",
                draft=Draft(
                    title=f"第{i + 1}章",
                    text=text,
                    summary=ChapterSummary.model_validate(said),
                    author="seed",
                    reason="seed",
                    now=now,
                ),
            )
    finally:
        await store.close()
        await repo.close()


async def _check_novel(data: Path) -> dict[str, int]:
    from novel.splitter import split_text
    from retrieval.types import Filter

    async with novel_service(data) as (service, store):  # reconciles on start-up
        truth = await service.repo.book.current_map(CHAT)
        assert len(truth) == CHAPTERS
        chapters = await service.repo.book.chapters(CHAT)
        assert sorted(c.chapter_no for c in chapters) == list(range(1, CHAPTERS + 1))
        points = await store.scroll(Filter(equals={"namespace": f"novel:{CHAT}"}), limit=100_000)
        counts: dict[str, int] = {}
        summaries: dict[str, int] = {}  # one L3 summary point per current version
        texts: dict[str, str] = {}
        for chapter_id, (_, version) in truth.items():
            row = await service.repo.book.version(chapter_id, version)
            assert row is not None
            texts[chapter_id] = row.text
        for c in points:
            cid = str(c.extra.get("chapter_id", c.doc_id))
            assert cid in truth, f"orphan chunk of a deleted chapter {cid}"
            assert int(c.extra["version"]) == truth[cid][1], "orphan chunk of an old version"
            assert c.extra.get("current") is True, "current version chunk not marked current"
            for a, b in MARK.findall(c.text):
                assert f"〔{a}-{b}〕" in texts[cid], "chunk text is not the current version's"
            if c.extra.get("kind") == "summary":
                summaries[cid] = summaries.get(cid, 0) + 1
                continue
            counts[cid] = counts.get(cid, 0) + 1
        for cid, text in texts.items():
            assert counts.get(cid, 0) == len(split_text(text)), ("missing chunks", cid)
            assert summaries.get(cid, 0) == 1, ("summary point", cid)
        for doc in DOCS:
            for hit in await service.memory.search(CHAT, f"〔{doc} 林远 渡口 灯笼", limit=30):
                for a, b in MARK.findall(hit.text):
                    assert f"〔{a}-{b}〕" in texts[hit.chapter_id], "stale text in search"
        return {cid: v for cid, (_, v) in truth.items()}


async def _seed_story(data: Path) -> None:
    texts = (STORY_STATIC[0], story_text(0, 6), STORY_STATIC[1])
    await _seed_novel(data, [(t, {"summary": t[:20]}) for t in texts])


def _facts(state: object) -> object:
    """What the chapters established: statuses, places, and the names they brought in (as
    introductions, or known from their summaries and pending proposals)."""
    from novel.story_state import StoryState

    assert isinstance(state, StoryState)
    names = {i.name for i in state.introduced} | set(state.known)
    return state.characters, state.places, names - set(state.blueprint.name_index())


async def _check_story(data: Path, done: list[int], inflight: int | None) -> int:
    """The invariants after a kill during a revision of chapter 2; returns the current
    version's marker number."""
    from novel.story_state import replay

    await _check_novel(data)  # every chapter's plot memory: its current version's, whole

    async with novel_service(data) as (service, _):
        repo = service.repo
        chapter = await repo.book.chapter(CHAT, 2)
        assert chapter is not None
        versions = await repo.book.versions(chapter.id)
        marks = [int(m.group(2)) for v in versions if (m := MARK.search(v.text))]
        assert len(marks) == len(versions)
        current = marks[[v.version for v in versions].index(chapter.current_version)]
        # the old version or the interrupted revision's, never another
        if inflight is not None and current == inflight:
            assert marks == [0, *done, inflight], (marks, done, inflight)
        else:
            assert marks == [0, *done] and current == marks[-1], (marks, done, inflight)
        assert chapter.current_version == versions[-1].version
        # the story state: the replay of the current chapters, that version's facts only
        bp = await service.chapters.blueprint(CHAT)
        texts = [v.text for _, v in await repo.book.current_versions(CHAT)]
        state = await service.chapters.story_state(CHAT)
        assert _facts(state) == _facts(replay(bp, texts))
        name, place, fate = story_facts(current)
        assert _facts(state)[2] == {name}, (current, _facts(state)[2])  # type: ignore[index]
        lin, huo = state.character("林远"), state.character("霍三")
        assert lin is not None and lin.seen is not None and lin.seen.place == place
        assert huo is not None and huo.status is not None and huo.status.status == fate
        proposed = {
            str(c.payload.get("name"))
            for c in await repo.world.pending_changes(CHAT)
            if c.kind == "character"
        }
        assert proposed <= {name}, (proposed, name)
        return current


@pytest.mark.serial  # kills after a real-time delay: run apart (tests/parallel.py)
@pytest.mark.skipif(RUNS <= 0, reason="BAIBAO_SIGKILL_RUNS=0")
async def test_sigkill_during_a_revision_keeps_chapter_memory_and_story_state(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    await _seeded(pytestconfig, lambda rng: _story_campaign(tmp_path, rng))


async def _story_campaign(tmp_path: Path, rng: random.Random) -> None:
    data = tmp_path / "story"
    data.mkdir()
    await _seed_story(data)
    done: list[int] = []
    log: list[str] = []
    interrupted = 0
    for run in range(STORY_RUNS):
        delay, lines = _kill_during_ops("story", data, rng)
        begun = [int(x.split()[1]) for x in lines if x.startswith("BEGIN ")]
        ended = [int(x.split()[1]) for x in lines if x.startswith("OP ")]
        inflight = begun[-1] if begun and begun[-1] not in ended else None
        done += ended
        current = await _check_story(data, done, inflight)
        if inflight is not None:
            interrupted += 1
            if current == inflight:
                done.append(inflight)
        log.append(
            f"run {run} killed after {delay:.2f}s, {len(ended)} revisions done,"
            f" interrupted {inflight}, current 〔乙-{current:05d}〕"
        )
    print("\n".join(log))
    assert interrupted > 0, "no kill landed during a revision: widen BAIBAO_SIGKILL_WINDOW_S"


@pytest.mark.skipif(RUNS <= 0, reason="BAIBAO_SIGKILL_RUNS=0")
async def test_sigkill_during_delete_restore_or_purge_loses_nothing(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    await _seeded(pytestconfig, lambda rng: _trash_campaign(tmp_path, rng))


async def _trash_campaign(tmp_path: Path, rng: random.Random) -> None:
    data = tmp_path / "trash"
    (data / "src").mkdir(parents=True)
    await _seed_library(data)
    log: list[str] = []
    interrupted: dict[str, int] = {}
    for run in range(max(1, RUNS // 2)):
        delay, lines = _kill_inside_ops("trash", data, rng)
        begun = [x.split()[1] for x in lines if x.startswith("BEGIN ")]
        ops = [x for x in lines if x.startswith("OP ")]
        last = lines[-1] if lines else ""
        if last.startswith("BEGIN "):  # killed inside a delete, a restore or a purge
            interrupted[last.split()[1]] = interrupted.get(last.split()[1], 0) + 1
        state = await _check_library(data)
        log.append(
            f"run {run} killed after {delay:.2f}s, {len(ops)} ops ({len(begun)} trash ops),"
            f" last {last!r}: {state}"
        )
    print("\n".join(log))
    print("killed inside:", interrupted)
    assert interrupted, "no kill landed in a trash operation: widen BAIBAO_SIGKILL_WINDOW_S"


def campaign_seed(config: pytest.Config) -> tuple[int, str]:
    """The seed and where it came from: `BAIBAO_SIGKILL_SEED`, else the seed this pytest run
    prints (pytest-randomly's, else Hypothesis's), else a fresh one (printed with a failure)."""
    if SEED_OVERRIDE is not None:
        return int(SEED_OVERRIDE), "BAIBAO_SIGKILL_SEED"
    try:
        randomly = config.getoption("randomly_seed")
    except ValueError:  # pytest-randomly not loaded (-p no:randomly)
        randomly = None
    if isinstance(randomly, int):
        return randomly, "--randomly-seed"
    hypothesis = config.getoption("hypothesis_seed", None)
    if hypothesis is not None:
        return int(hypothesis), "--hypothesis-seed"
    return time.time_ns() % (1 << 32), "time"


def replay_note(seed: int, source: str) -> str:
    return (
        f"SIGKILL campaign seed {seed} (from {source}); replay with "
        f"BAIBAO_SIGKILL_SEED={seed} .venv/bin/python -m pytest -q {Path(__file__).relative_to(ROOT)}"
    )


@pytest.mark.serial  # kills after a real-time delay: run apart (tests/parallel.py)
@pytest.mark.skipif(RUNS <= 0, reason="BAIBAO_SIGKILL_RUNS=0")
async def test_sigkill_campaign_leaves_consistent_stores(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    await _seeded(pytestconfig, lambda rng: _campaign(tmp_path, rng))


async def _seeded(
    config: pytest.Config, campaign: Callable[[random.Random], Awaitable[None]]
) -> None:
    """Run a campaign on the run's seed, printed, and named again by a failure."""
    seed, source = campaign_seed(config)
    print(replay_note(seed, source))
    try:
        await campaign(random.Random(seed))
    except BaseException as exc:
        exc.add_note(replay_note(seed, source))
        raise


async def _campaign(tmp_path: Path, rng: random.Random) -> None:
    corpus, novel = tmp_path / "corpus", tmp_path / "novel"
    corpus.mkdir()
    novel.mkdir()
    await _seed_novel(novel)
    log: list[str] = []
    completed = 0
    for run in range(RUNS):
        mode = ("corpus", "novel")[run % 2]
        data = corpus if mode == "corpus" else novel
        delay, lines = _kill_during_ops(mode, data, rng)
        ops = [x for x in lines if x.startswith("OP ")]
        completed += len(ops)
        state = await (_check_corpus(data) if mode == "corpus" else _check_novel(data))
        log.append(f"run {run} {mode} killed after {delay:.2f}s, {len(ops)} ops done: {state}")
    print("\n".join(log))
    assert completed > 0, "no operation ever completed: widen BAIBAO_SIGKILL_WINDOW_S"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["-p", "randomly", "--randomly-seed=1234", "--hypothesis-seed=99"],
            "(1234, '--randomly-seed')",
        ),
        (["-p", "no:randomly", "--hypothesis-seed=99"], "(99, '--hypothesis-seed')"),
    ],
)
def test_the_campaign_seed_is_the_one_the_run_prints(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], expected: str
) -> None:
    """`.ci/run` prints the seed it passes as --randomly-seed and --hypothesis-seed; a run with
    that seed replays the campaign's schedule."""
    monkeypatch.delenv("BAIBAO_SIGKILL_SEED", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ["PYTHONPATH"]]))
    pytester.makepyfile(
        """
        from tests.reliability.test_sigkill import campaign_seed

        def test_seed(pytestconfig):
            print("SEED", campaign_seed(pytestconfig))
        """
    )
    result = pytester.runpytest_subprocess("-s", *args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*SEED {expected}"])
