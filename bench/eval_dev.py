"""English → Chinese recall@5 on the dev set: KJV verses against the ingested CUV.

`/work/shared/data/dev-bible-queries-en.jsonl` (or `--queries`): 400 KJV verses from Gen, Ps,
Prov and Isa, each with its gold OSIS id. The real stack (`bot.app.App`) is built with the CUV
books `Gen,Ps,Prov,Isa` embedded (plus the sample corpus), every `en_kjv` text goes through
`app.search.search()` with each track alone and fused, and a query counts when a Bible chunk of
the gold verse is in the top 5. "gloss ranking" is the dense candidates re-ranked through the
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
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.eval_quality import CONFIGS, NO_GLOSS, _settings, make_embedder  # noqa: E402
from bot.app import App  # noqa: E402
from retrieval.types import Hit  # noqa: E402

# shared/ sits beside the checkout (CI) or two levels up (a worktree under /work/wt).
_NAME = Path("shared") / "data" / "dev-bible-queries-en.jsonl"
QUERIES = next((p / _NAME for p in ROOT.parents if (p / _NAME).is_file()), ROOT.parent / _NAME)
BOOKS = "Gen,Ps,Prov,Isa"
K = 5


def found(hits: Sequence[Hit], gold: str, k: int = K) -> bool:
    return any(h.chunk.type == "bible" and gold in h.chunk.scripture_refs for h in hits[:k])


async def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedder", default="e5")
    p.add_argument("--queries", type=Path, default=QUERIES)
    p.add_argument("--data-dir", type=Path, required=True, help="the corpus is kept and reused")
    p.add_argument("--limit", type=int, default=0, help="first N queries only")
    p.add_argument("--no-gloss", action="store_true", help=NO_GLOSS)
    args = p.parse_args(argv)
    rows = [json.loads(line) for line in args.queries.read_text(encoding="utf-8").splitlines()]
    if args.limit:
        rows = rows[: args.limit]
    data = args.data_dir / f"{args.embedder}-{BOOKS.replace(',', '_')}"
    async with App(_settings(data, BOOKS), embedder=make_embedder(args.embedder)) as app:
        if args.no_gloss:
            app.search.gloss = None
        t0 = time.perf_counter()
        await app.prepare_samples()
        print(f"corpus ready in {time.perf_counter() - t0:.0f} s", flush=True)
        print(f"| config | recall@{K} (n={len(rows)}) |\n|---|---|")
        for name, tracks in CONFIGS.items():
            hits = 0
            for row in rows:
                result = await app.search.search(row["en_kjv"], limit=K, tracks=tracks)
                hits += found(result.hits, row["gold"])
            print(f"| {name} | {hits / len(rows):.3f} |", flush=True)
        if app.search.gloss is not None:  # the dense candidates re-ranked through the gloss
            hits = 0
            for row in rows:
                found_ = await app.search.candidates(row["en_kjv"])
                ranked = found_.per_track["gloss"].ranked if "gloss" in found_.per_track else []
                hits += found([Hit(s.chunk, s.score, {}, {}) for s in ranked], row["gold"])
            print(f"| gloss ranking | {hits / len(rows):.3f} |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
