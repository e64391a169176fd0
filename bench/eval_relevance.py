"""The relevance gate on the relevance set's two halves (and the labelled set as held-out).

`tests/quality/relevance_calibration.yaml` is the half the gate's thresholds are tuned on;
`tests/quality/relevance_test.yaml` the half they are graded on (the tests assert on it only).
For each embedder the real stack is built (`bot.app.App`: Qdrant Edge + SQLite, BM25, graph)
over the sample corpus + Ephesians, every question goes through `app.search.search()`, and
`RelevanceGate.for_embedder(model_id)` decides whether the corpus addresses it. Reported per
half: addressed questions answered (recall) and unaddressed ones declined, overall and by kind,
plus the held-out labelled set (every question there is addressed by the samples).

`--calibrate` also searches the thresholds on the calibration half (`calibrate`) and prints the
chosen ones, graded on the test half beside the shipped gate.

    nice .venv/bin/python bench/eval_relevance.py --embedders hash,e5 --data-dir /tmp/q
    nice .venv/bin/python bench/eval_relevance.py --embedders e5 --data-dir /tmp/q --calibrate
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.eval_quality import (  # noqa: E402
    NO_GLOSS,
    _settings,
    corpus_dir,
    load_questions,
    make_embedder,
)
from bot.app import App  # noqa: E402
from retrieval.ports import Embedder  # noqa: E402
from retrieval.relevance import Evidence, RelevanceGate  # noqa: E402

SETS = ROOT / "tests" / "quality"
CALIBRATION = SETS / "relevance_calibration.yaml"
TEST = SETS / "relevance_test.yaml"


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    addressed: bool
    lang: str
    kind: str


def load_items(path: Path = TEST) -> list[Item]:
    rows = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Item(r["id"], r["question"], r["addressed"], r["lang"], r["kind"]) for r in rows]


@dataclass
class GateRun:
    embedder: str
    model_id: str
    decided: dict[str, bool]  # item id → answered
    evidence: dict[str, Evidence]
    held_out: dict[str, bool]  # labelled question id → answered
    found: dict[str, bool]  # item or labelled question id → the search returned passages
    held_out_evidence: dict[str, Evidence]

    def regated(self, gate: RelevanceGate) -> GateRun:
        """The same searches decided by another gate (the evidence does not depend on it)."""
        return dataclasses.replace(
            self,
            decided={k: self.found[k] and gate.addressed(e) for k, e in self.evidence.items()},
            held_out={
                k: self.found[k] and gate.addressed(e) for k, e in self.held_out_evidence.items()
            },
        )


async def run_gate(
    embedder_name: str,
    items: Sequence[Item],
    *,
    data_dir: Path | None = None,
    gate: RelevanceGate | None = None,
    gloss: bool = True,
    embedder: Embedder | None = None,
) -> GateRun:
    """`data_dir`: keep the prepared corpus there (`eval_quality.corpus_dir`) and reuse it.
    `embedder`: this instance instead of a new `make_embedder(embedder_name)`."""
    labelled = load_questions()
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="baibao-gate-")))
        else:
            tmp = corpus_dir(data_dir, embedder_name, "Eph")
        chosen_embedder = embedder or make_embedder(embedder_name)
        async with App(_settings(tmp, "Eph"), embedder=chosen_embedder) as app:
            if not gloss:
                app.search.gloss = None
            await app.prepare_samples()
            model_id = app.embedder.model_id
            evidence: dict[str, Evidence] = {}
            held_out: dict[str, Evidence] = {}
            found: dict[str, bool] = {}
            for key, text, into in [
                *((i.id, i.question, evidence) for i in items),
                *((q.id, q.text, held_out) for q in labelled),
            ]:
                result = await app.search.search(text)
                into[key] = result.evidence
                found[key] = bool(result.hits)
    searched = GateRun(embedder_name, model_id, {}, evidence, {}, found, held_out)
    return searched.regated(gate or RelevanceGate.for_embedder(model_id))


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


# ---- calibration ----------------------------------------------------------------------------

# The thresholds searched (RelevanceGate's fields). A dense floor no similarity reaches (1.01)
# stands for "no dense rule".
NO_DENSE_RULE = 1.01
GRID: dict[str, list[float]] = {
    "min_coverage": [round(0.50 + 0.05 * i, 2) for i in range(7)],  # 0.50 … 0.80
    "partial_coverage": [round(0.30 + 0.05 * i, 2) for i in range(6)],  # 0.30 … 0.55
    "min_specific": [1, 2, 3],
    "dense_coverage": [round(0.35 + 0.05 * i, 2) for i in range(6)],  # 0.35 … 0.60
    "dense_floor": [round(0.850 + 0.005 * i, 3) for i in range(21)] + [NO_DENSE_RULE],
}
WRONG_ANSWER_COST = 2  # answering an unaddressed question is worse than declining one


def _gates(dense: bool) -> Iterator[RelevanceGate]:
    floors = GRID["dense_floor"] if dense else [NO_DENSE_RULE]
    for mc, pc, ms, dc, df in itertools.product(
        GRID["min_coverage"],
        GRID["partial_coverage"],
        GRID["min_specific"],
        GRID["dense_coverage"],
        floors,
    ):
        if pc < mc and dc < mc:  # a lower bar than coverage alone, or the rule is idle
            yield _gate((mc, pc, ms, dc, df))


def _gate(point: tuple[float, ...]) -> RelevanceGate:
    mc, pc, ms, dc, df = point
    return RelevanceGate(
        min_coverage=mc,
        partial_coverage=pc,
        min_specific=int(ms),
        dense_floor=None if df == NO_DENSE_RULE else df,
        dense_coverage=dc,
    )


def cost(run: GateRun, items: Sequence[Item], gate: RelevanceGate) -> int:
    """Errors of `gate` on `items`, given the searches of `run`."""
    total = 0
    for i in items:
        answered = run.found[i.id] and gate.addressed(run.evidence[i.id])
        if answered != i.addressed:
            total += 1 if i.addressed else WRONG_ANSWER_COST
    return total


def _as_point(gate: RelevanceGate) -> tuple[float, ...]:
    floor = NO_DENSE_RULE if gate.dense_floor is None else gate.dense_floor
    return (gate.min_coverage, gate.partial_coverage, gate.min_specific, gate.dense_coverage, floor)


def calibrate(
    run: GateRun, items: Sequence[Item], *, dense: bool, prior: RelevanceGate | None = None
) -> tuple[RelevanceGate, int]:
    """The gate with the fewest errors on `items` (an unaddressed question answered counts
    `WRONG_ANSWER_COST`) and that cost. Many gates tie. With a `prior` (the shipped gate): the
    prior when it is among them — a threshold moves only when the calibration half shows it
    wrong — else the tied grid gate nearest it. Without: the tied grid gate nearest the centre
    of the tied region (each threshold's median over the tied gates). Distances are in grid
    steps. `dense`: search a dense floor too (embedders with a calibrated similarity scale)."""
    scored = [(cost(run, items, g), g) for g in _gates(dense)]
    best = min(c for c, _ in scored)
    if prior is not None and cost(run, items, prior) <= best:
        return prior, cost(run, items, prior)
    tied = [_as_point(g) for c, g in scored if c == best]
    target = (
        _as_point(prior)
        if prior is not None
        else tuple(statistics.median(p[i] for p in tied) for i in range(5))
    )
    steps = (0.05, 0.05, 1.0, 0.05, 0.005)
    point = min(
        tied, key=lambda p: sum(abs(a - b) / s for a, b, s in zip(p, target, steps, strict=True))
    )
    return _gate(point), best


# ---- related reading ------------------------------------------------------------------------

RELATED_GRID = [round(0.20 + 0.05 * i, 2) for i in range(13)]  # related_coverage 0.20 … 0.80


def shows_related(run: GateRun, key: str, gate: RelevanceGate | None) -> bool:
    """Would a decline of `key` list related reading? `gate=None`: as before issue 24, whenever
    the search found passages."""
    evidence = run.evidence.get(key) or run.held_out_evidence[key]
    return run.found[key] and (gate is None or gate.related(evidence))


def related_rates(
    run: GateRun, items: Sequence[Item], gate: RelevanceGate | None
) -> tuple[int, int, int, int]:
    """(unaddressed with no related reading, unaddressed, addressed that would keep it were
    they declined — the floor alone, `RelevanceGate.near` — addressed)."""
    yes = [i for i in items if i.addressed]
    no = [i for i in items if not i.addressed]
    kept = [i for i in yes if run.found[i.id] and (gate is None or gate.near(run.evidence[i.id]))]
    return (sum(not shows_related(run, i.id, gate) for i in no), len(no), len(kept), len(yes))


def calibrate_related(run: GateRun, items: Sequence[Item], gate: RelevanceGate) -> float:
    """The related-reading floor for `gate` on `items`: of the floors under which every
    addressed question would keep its related reading were it declined, the one that holds it
    back from the most unaddressed questions (the lowest of those that tie)."""
    best: tuple[int, float] | None = None
    for floor in RELATED_GRID:
        candidate = dataclasses.replace(gate, related_coverage=floor)
        none, _, kept, addressed = related_rates(run, items, candidate)
        if kept == addressed and (best is None or none > best[0]):
            best = (none, floor)
    return gate.related_coverage if best is None else best[1]


def related_report(
    runs: Sequence[GateRun], calibration: Sequence[Item], test: Sequence[Item]
) -> str:
    """Related reading offered with a decline, before (whenever passages were found) and
    after (`RelevanceGate.related`), on both halves and the held-out near-misses."""
    out = ["### Related reading with a decline (issue 24)\n"]
    out.append(
        "| embedder | floor (shipped / tuned on calibration) | test: unaddressed with none, "
        "before → after | test: addressed that keep it | held-out declined that keep it "
        "| calibration: unaddressed with none, before → after |"
    )
    out.append("|---|---|---|---|---|---|")
    notes: list[str] = []
    for run in runs:
        gate = RelevanceGate.for_embedder(run.model_id)
        tuned = calibrate_related(run, calibration, gate)
        b, n, _, _ = related_rates(run, test, None)
        a, _, kept, addressed = related_rates(run, test, gate)
        cb, cn, _, _ = related_rates(run, calibration, None)
        ca, _, _, _ = related_rates(run, calibration, gate)
        misses = [k for k, v in run.held_out.items() if not v]
        held = [k for k in misses if shows_related(run, k, gate)]
        out.append(
            f"| {run.embedder} | {gate.related_coverage} / {tuned} | {_share(b, n)} → "
            f"{_share(a, n)} | {_share(kept, addressed)} | {_share(len(held), len(misses))} "
            f"| {_share(cb, cn)} → {_share(ca, cn)} |"
        )
        shown = [i for i in test if not i.addressed and shows_related(run, i.id, gate)]
        lost = [k for k in misses if k not in held]
        notes.append(
            f"- {run.embedder}: test unaddressed still shown related reading: "
            + (", ".join(f"{i.id} {i.question} ({i.kind})" for i in shown) or "none")
            + f"; held-out near-misses that lose it: {', '.join(lost) or 'none'}"
        )
    out.append("")
    out.extend(notes)
    return "\n".join(out)


# ---- reporting ------------------------------------------------------------------------------


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.1%}" if whole else "–"


def report(runs: Sequence[GateRun], items: Sequence[Item], title: str = "") -> str:
    out = [f"### {title}\n"] if title else []
    out.append(
        "| embedder | addressed answered | unaddressed declined | held-out answered "
        "| decline precision / recall | answer precision / recall |"
    )
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


def _gate_text(gate: RelevanceGate) -> str:
    return ", ".join(f"{f.name}={getattr(gate, f.name)}" for f in dataclasses.fields(gate))


def calibration_report(
    runs: Mapping[str, GateRun], calibration: Sequence[Item], test: Sequence[Item]
) -> str:
    """The thresholds each embedder's evidence on the calibration half picks (with the shipped
    gate as the prior, and without any), and how they do on the test half and held-out set."""
    out = ["### Thresholds tuned on the calibration half\n"]
    out.append(
        "| embedder | gate | cost on calibration | test: answered / declined | held-out answered "
        "| test + held-out questions only the dense rule answers |"
    )
    out.append("|---|---|---|---|---|---|")
    for name, run in runs.items():
        shipped = RelevanceGate.for_embedder(run.model_id)
        dense = shipped.dense_floor is not None
        gates = {
            "shipped": shipped,
            "chosen, shipped as prior": calibrate(run, calibration, dense=dense, prior=shipped)[0],
            "chosen, no prior": calibrate(run, calibration, dense=dense)[0],
        }
        for label, gate in gates.items():
            graded = run.regated(gate)
            a, na, d, nd = rates(graded, test)
            h = sum(graded.held_out.values())
            dense_only = [
                k
                for k, e in [*run.evidence.items(), *run.held_out_evidence.items()]
                if k not in {i.id for i in calibration}
                and run.found[k]
                and gate.addressed(e)
                and not dataclasses.replace(gate, dense_floor=None).addressed(e)
            ]
            out.append(
                f"| {name} | {label}: {_gate_text(gate)} | {cost(run, calibration, gate)} "
                f"| {a}/{na}, {d}/{nd} | {h}/{len(graded.held_out)} "
                f"| {', '.join(dense_only) or '–'} |"
            )
    return "\n".join(out)


async def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedders", default="hash,e5")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--no-gloss", action="store_true", help=NO_GLOSS)
    p.add_argument("--calibrate", action="store_true", help="tune on the calibration half")
    args = p.parse_args(argv)
    calibration, test = load_items(CALIBRATION), load_items(TEST)
    runs = {
        name.strip(): await run_gate(
            name.strip(), [*calibration, *test], data_dir=args.data_dir, gloss=not args.no_gloss
        )
        for name in args.embedders.split(",")
    }
    parts = [
        report(list(runs.values()), test, "Test half (graded)"),
        report(list(runs.values()), calibration, "Calibration half (tuned on)"),
    ]
    parts.append(related_report(list(runs.values()), calibration, test))
    if args.calibrate:
        parts.append(calibration_report(runs, calibration, test))
    text = "\n\n".join(parts)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
