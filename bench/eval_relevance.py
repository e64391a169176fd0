"""The relevance gate on tests/quality/relevance.yaml (and the labelled set as held-out).

For each embedder the real stack is built (`bot.app.App`: Qdrant Edge + SQLite, BM25, graph)
over the sample corpus + Ephesians, every question goes through `app.search.search()`, and
`RelevanceGate.for_embedder(model_id)` decides whether the corpus addresses it. Reported:
addressed questions answered (recall) and unaddressed ones declined, overall and by kind, plus
the held-out labelled set (every question there is addressed by the samples).

    nice .venv/bin/python bench/eval_relevance.py --embedders hash,e5 --data-dir /tmp/q
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

from bench.eval_quality import NO_GLOSS, _settings, load_questions, make_embedder  # noqa: E402
from bot.app import App  # noqa: E402
from retrieval.relevance import Evidence, RelevanceGate  # noqa: E402

RELEVANCE = ROOT / "tests" / "quality" / "relevance.yaml"


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    addressed: bool
    lang: str
    kind: str


def load_items(path: Path = RELEVANCE) -> list[Item]:
    rows = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Item(r["id"], r["question"], r["addressed"], r["lang"], r["kind"]) for r in rows]


@dataclass
class GateRun:
    embedder: str
    model_id: str
    decided: dict[str, bool]  # item id → answered
    evidence: dict[str, Evidence]
    held_out: dict[str, bool]  # labelled question id → answered


async def run_gate(
    embedder_name: str,
    items: Sequence[Item],
    *,
    data_dir: Path | None = None,
    gate: RelevanceGate | None = None,
    gloss: bool = True,
) -> GateRun:
    labelled = load_questions()
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="baibao-gate-")))
        else:
            tmp = data_dir / f"{embedder_name}-Eph"
        async with App(_settings(tmp, "Eph"), embedder=make_embedder(embedder_name)) as app:
            if not gloss:
                app.search.gloss = None
            await app.prepare_samples()
            model_id = app.embedder.model_id
            chosen = gate or RelevanceGate.for_embedder(model_id)
            decided: dict[str, bool] = {}
            evidence: dict[str, Evidence] = {}
            for item in items:
                result = await app.search.search(item.question)
                evidence[item.id] = result.evidence
                decided[item.id] = bool(result.hits) and chosen.addressed(result.evidence)
            held_out = {}
            for q in labelled:
                result = await app.search.search(q.text)
                held_out[q.id] = bool(result.hits) and chosen.addressed(result.evidence)
    return GateRun(embedder_name, model_id, decided, evidence, held_out)


def rates(run: GateRun, items: Sequence[Item]) -> tuple[int, int, int, int]:
    """(addressed answered, addressed, unaddressed declined, unaddressed)."""
    yes = [i for i in items if i.addressed]
    no = [i for i in items if not i.addressed]
    return (
        sum(run.decided[i.id] for i in yes),
        len(yes),
        sum(not run.decided[i.id] for i in no),
        len(no),
    )


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.1%}" if whole else "–"


def report(runs: Sequence[GateRun], items: Sequence[Item]) -> str:
    out = [
        "| embedder | addressed answered | unaddressed declined | held-out answered "
        "| decline precision / recall | answer precision / recall |"
    ]
    out.append("|---|---|---|---|---|---|")
    for run in runs:
        a, na, d, nd = rates(run, items)
        h = sum(run.held_out.values())
        declined = d + (na - a)  # every question the gate declined, rightly or not
        answered = a + (nd - d)
        out.append(
            f"| {run.embedder} ({run.model_id}) | {a}/{na} = {a / na:.1%} | "
            f"{d}/{nd} = {d / nd:.1%} | {h}/{len(run.held_out)} = {h / len(run.held_out):.1%} "
            f"| {_share(d, declined)} / {_share(d, nd)} | {_share(a, answered)} / {_share(a, na)} |"
        )
    out.append("")
    out.append(
        "Decline precision: of the questions the gate declined, the share the corpus does not "
        "address; recall: of those, the share declined. Answer precision / recall likewise."
    )
    out.append("")
    out.append("By kind (right / n):")
    out.append("")
    for run in runs:
        groups: dict[str, list[bool]] = defaultdict(list)
        for i in items:
            right = run.decided[i.id] == i.addressed
            groups[f"{'addressed' if i.addressed else 'not'}/{i.kind}/{i.lang}"].append(right)
        cells = ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in sorted(groups.items()))
        out.append(f"- {run.embedder}: {cells}")
    out.append("")
    out.append("Wrong decisions:")
    out.append("")
    for run in runs:
        for i in items:
            if run.decided[i.id] != i.addressed:
                e = run.evidence[i.id]
                out.append(
                    f"- {run.embedder} {i.id} ({'addressed' if i.addressed else 'not'}): "
                    f"{i.question} — coverage {e.coverage:.2f}, specific {e.specific}, "
                    f"dense {e.dense:.3f}"
                )
        missed = [k for k, v in run.held_out.items() if not v]
        out.append(f"- {run.embedder} held-out labelled questions declined: {', '.join(missed)}")
    return "\n".join(out)


async def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedders", default="hash,e5")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--no-gloss", action="store_true", help=NO_GLOSS)
    args = p.parse_args(argv)
    items = load_items()
    runs = [
        await run_gate(name.strip(), items, data_dir=args.data_dir, gloss=not args.no_gloss)
        for name in args.embedders.split(",")
    ]
    text = report(runs, items)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
