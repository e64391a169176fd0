"""Answerability on the answerability set's two halves (issue 43): does `/ask` answer the
questions some passage answers, and say 「职事语料没有直接论及」 for those none does?

`tests/quality/answerability_calibration.yaml` is the half the check (`retrieval.answer.asks`)
was tuned on; `tests/quality/answerability_test.yaml` the half it is graded on (the tests assert
on it only). Both were written and split before any tuning. `answerability_test2.yaml`
(`--half test2`) was written blind after the test half was seen, and is run once; so is
`answerability_test3.yaml` (`--half test3`), written blind after test2's run, and
`answerability_test4.yaml` (`--half test4`), written blind after test3's run. For each embedder the real stack is
built (`bot.app.App`: Qdrant Edge + SQLite, BM25, graph, no model) over the sample corpus +
Ephesians and every question goes through `Scholar.answer`, as `/ask` and `baibao ask` do.

Right, for an answerable question: answered (`addressed`), and — reported beside it — a passage
shown holds the fact (`holds`). For an unanswerable one: declined, with related reading.

    nice .venv/bin/python bench/eval_answerability.py --embedders e5,hash --half both \
        --out bench/results/answerability.md
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.eval_quality import _settings, corpus_dir, make_embedder  # noqa: E402
from bot.app import App  # noqa: E402
from retrieval.answer import Answer  # noqa: E402
from retrieval.ports import Embedder  # noqa: E402
from retrieval.requests import AskRequest  # noqa: E402
from retrieval.text import to_simplified  # noqa: E402

SETS = ROOT / "tests" / "quality"
HALVES = {
    "calibration": SETS / "answerability_calibration.yaml",
    "test": SETS / "answerability_test.yaml",
    # Written blind after the test half was seen; nothing tuned on it; run once.
    "test2": SETS / "answerability_test2.yaml",
    # Written blind after test2's run; nothing tuned on it; run once.
    "test3": SETS / "answerability_test3.yaml",
    # Written blind while test3's fixes were made (after test3's run); run once.
    "test4": SETS / "answerability_test4.yaml",
}
# The relevance set's halves, read the same way (`addressed` as `answerable`): /ask must still
# answer what it answered and decline what it declined (`--relevance`).
RELEVANCE = {
    "relevance calibration": SETS / "relevance_calibration.yaml",
    "relevance test": SETS / "relevance_test.yaml",
}
BOOKS = "Eph"


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    answerable: bool
    asks: str
    lang: str
    holds: str = ""


@dataclass(frozen=True)
class Outcome:
    item: Item
    addressed: bool
    shows_fact: bool  # a passage shown holds the fact (answerable questions)
    related: int  # passages offered as related reading (declined questions)
    unstated: str  # the kind the reply says no passage states ("" for none)

    @property
    def right(self) -> bool:
        return self.addressed == self.item.answerable


def load_items(path: Path) -> list[Item]:
    """An answerability half, or a relevance half (`addressed` read as `answerable`)."""
    rows = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [
        Item(
            r["id"],
            r["question"],
            r.get("answerable", r.get("addressed", False)),
            r.get("asks", r.get("kind", "")),
            r["lang"],
            r.get("holds", ""),
        )
        for r in rows
    ]


def outcome(item: Item, answer: Answer) -> Outcome:
    shown = [c.chunk.text for c in answer.citations]
    fact = to_simplified(item.holds).lower()
    holds = bool(fact) and any(fact in to_simplified(t).lower() for t in shown)
    kind = answer.unstated.kind if answer.unstated is not None else ""
    return Outcome(item, answer.addressed, holds, len(answer.related), kind)


async def run_items(
    embedder_name: str,
    items: Sequence[Item],
    *,
    data_dir: Path | None = None,
    embedder: Embedder | None = None,
) -> list[Outcome]:
    """Every item through `Scholar.answer` on the sample corpus + Ephesians (no model).
    `data_dir`: keep the prepared corpus there (`eval_quality.corpus_dir`) and reuse it."""
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="baibao-ans-")))
        else:
            tmp = corpus_dir(data_dir, embedder_name, BOOKS)
        async with App(
            _settings(tmp, BOOKS), embedder=embedder or make_embedder(embedder_name)
        ) as app:
            await app.prepare_samples()
            out = []
            for item in items:
                answer = await app.scholar.answer(
                    "en" if item.lang == "en" else "zh", AskRequest(item.question)
                )
                out.append(outcome(item, answer))
    return out


def rates(outcomes: Sequence[Outcome]) -> tuple[int, int, int, int]:
    """(answerable answered, answerable, unanswerable declined, unanswerable)."""
    yes = [o for o in outcomes if o.item.answerable]
    no = [o for o in outcomes if not o.item.answerable]
    return sum(o.right for o in yes), len(yes), sum(o.right for o in no), len(no)


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f} %)" if d else "–"


def report(runs: dict[tuple[str, str], list[Outcome]]) -> str:
    out = ["## Right on each side\n"]
    out.append("| embedder | half | answerable answered | fact shown | unanswerable declined |")
    out.append("|---|---|---|---|---|")
    for (name, half), outcomes in runs.items():
        a, na, d, nd = rates(outcomes)
        with_fact = [o for o in outcomes if o.item.answerable and o.item.holds]
        shown = _pct(sum(o.shows_fact for o in with_fact), len(with_fact))
        out.append(f"| {name} | {half} | {_pct(a, na)} | {shown} | {_pct(d, nd)} |")
    out.append("\n## By kind (right / questions)\n")
    kinds = sorted({o.item.asks for outcomes in runs.values() for o in outcomes})
    out.append("| embedder | half | " + " | ".join(kinds) + " |")
    out.append("|---|---|" + "---|" * len(kinds))
    for (name, half), outcomes in runs.items():
        by: dict[str, list[Outcome]] = defaultdict(list)
        for o in outcomes:
            by[o.item.asks].append(o)
        cells = [_pct(sum(o.right for o in by[k]), len(by[k])) for k in kinds]
        out.append(f"| {name} | {half} | " + " | ".join(cells) + " |")
    out.append("\n## Wrong\n")
    for (name, half), outcomes in runs.items():
        for o in outcomes:
            if not o.right:
                said = "answered" if o.addressed else f"declined ({o.unstated or 'gate'})"
                out.append(
                    f"- {name} · {half} · {o.item.id} ({o.item.asks}): {said} — {o.item.question}"
                )
    return "\n".join(out) + "\n"


async def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedders", default="e5,hash")
    p.add_argument(
        "--half",
        choices=("calibration", "test", "test2", "test3", "test4", "both", "all"),
        default="both",
    )
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--relevance", action="store_true", help="also the relevance set's halves")
    args = p.parse_args(argv)
    halves = {"both": ["calibration", "test"], "all": list(HALVES)}.get(args.half, [args.half])
    sets = {h: HALVES[h] for h in halves} | (RELEVANCE if args.relevance else {})
    runs: dict[tuple[str, str], list[Outcome]] = {}
    for name in args.embedders.split(","):
        items = [(h, i) for h, path in sets.items() for i in load_items(path)]
        outcomes = await run_items(name, [i for _, i in items], data_dir=args.data_dir)
        for (half, _), o in zip(items, outcomes, strict=True):
            runs.setdefault((name, half), []).append(o)
    text = report(runs)
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
