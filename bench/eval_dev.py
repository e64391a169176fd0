"""English → Chinese recall@5 on the dev set: KJV verses against the ingested CUV.

`/work/shared/data/dev-bible-queries-en.jsonl` (or `--queries`): 400 KJV verses from Gen, Ps,
Prov and Isa, each with its gold OSIS id. The real stack (`bot.app.App`) is built with the CUV
books `Gen,Ps,Prov,Isa` embedded (plus the sample corpus), every `en_kjv` text goes through
`app.search.search()` with each track alone and fused, and a query counts when a Bible chunk of
the gold verse is in the top 5 (`--books` embeds fewer books and asks only their queries: the
suite's slice). "gloss ranking" is the dense candidates re-ranked through the
English → Chinese gloss (`retrieval.gloss`), one of the fused rankings; `--no-gloss` searches
without it (before/after).

    nice .venv/bin/python bench/eval_dev.py --embedder e5 --data-dir /tmp/dev
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.eval_quality import (  # noqa: E402
    CONFIGS,
    NO_GLOSS,
    _settings,
    corpus_dir,
    make_embedder,
)
from bot.app import App  # noqa: E402
from retrieval.ports import Embedder  # noqa: E402
from retrieval.types import Hit  # noqa: E402

# shared/ sits beside the checkout (CI) or two levels up (a worktree under /work/wt).
_NAME = Path("shared") / "data" / "dev-bible-queries-en.jsonl"
QUERIES = next((p / _NAME for p in ROOT.parents if (p / _NAME).is_file()), ROOT.parent / _NAME)
BOOKS = "Gen,Ps,Prov,Isa"
K = 5


def found(hits: Sequence[Hit], gold: str, k: int = K) -> bool:
    return any(h.chunk.type == "bible" and gold in h.chunk.scripture_refs for h in hits[:k])


def load_rows(path: Path = QUERIES, books: str = BOOKS) -> list[dict[str, str]]:
    """The dev set's queries whose gold verse is in `books`."""
    chosen = {b.strip() for b in books.split(",")}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if r["gold"].split(".")[0] in chosen]


async def run_dev(
    embedder_name: str,
    rows: Sequence[dict[str, str]],
    data_dir: Path,
    *,
    books: str = BOOKS,
    gloss: bool = True,
    embedder: Embedder | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, list[bool]]:
    """Per configuration (each track alone, fused, and the gloss ranking when the gloss is
    on), whether each query found its gold verse in the top K. The corpus (samples + `books`)
    is kept in `corpus_dir(data_dir, embedder_name, books)` and reused."""
    data = corpus_dir(data_dir, embedder_name, books)
    out: dict[str, list[bool]] = {}
    chosen = embedder or make_embedder(embedder_name)
    async with App(_settings(data, books), embedder=chosen) as app:
        if not gloss:
            app.search.gloss = None
        t0 = time.perf_counter()
        await app.prepare_samples()
        log(f"corpus ready in {time.perf_counter() - t0:.0f} s")
        for name, tracks in CONFIGS.items():
            if name != "fused":
                out[name] = []
                for row in rows:
                    result = await app.search.search(row["en_kjv"], limit=K, tracks=tracks)
                    out[name].append(found(result.hits, row["gold"]))
        out["fused"], glossed = [], []
        for row in rows:  # `search()` is `candidates()` then `fuse()`: one search for both
            candidates = await app.search.candidates(row["en_kjv"])
            out["fused"].append(found(app.search.fuse(candidates, limit=K).hits, row["gold"]))
            # the dense candidates re-ranked through the gloss (one of the fused rankings)
            ranked = candidates.per_track["gloss"].ranked if "gloss" in candidates.per_track else []
            glossed.append(found([Hit(s.chunk, s.score, {}, {}) for s in ranked], row["gold"]))
        if app.search.gloss is not None:
            out["gloss ranking"] = glossed
    return out


async def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedder", default="e5")
    p.add_argument("--queries", type=Path, default=QUERIES)
    p.add_argument("--data-dir", type=Path, required=True, help="the corpus is kept and reused")
    p.add_argument("--books", default=BOOKS, help="Bible books to embed; their queries only")
    p.add_argument("--limit", type=int, default=0, help="first N queries only")
    p.add_argument("--no-gloss", action="store_true", help=NO_GLOSS)
    args = p.parse_args(argv)
    rows = load_rows(args.queries, args.books)
    if args.limit:
        rows = rows[: args.limit]
    result = await run_dev(
        args.embedder, rows, args.data_dir, books=args.books, gloss=not args.no_gloss
    )
    print(f"| config | recall@{K} (n={len(rows)}) |\n|---|---|")
    for name, hits in result.items():
        print(f"| {name} | {sum(hits) / len(hits):.3f} |")


if __name__ == "__main__":
    asyncio.run(main())
