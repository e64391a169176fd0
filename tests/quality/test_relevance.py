"""The relevance gate on the test half of the relevance set (tests/quality/relevance_test.yaml),
on the real stack (App: Qdrant Edge, SQLite, BM25, graph). The thresholds are tuned on the
other half only (relevance_calibration.yaml, `bench/eval_relevance.py --calibrate`); nothing
here reads the calibration half except to check the split.

Two embedders:
- e5, the shipped default (`e5_corpora`), whose gate has a dense floor (`DENSE_FLOORS`):
  half-covered questions very close in meaning are answered. The floors below hold it, and
  `test_e5_dense_floor_*` show the floor deciding on real evidence both ways.
- the hash fake, which has no dense floor: the gate decides on terms and verses alone.

Measured on the test half (bench/results/relevance.md, "the split"): e5 32/32 addressed
answered, 32/32 unaddressed declined, 65/73 held-out labelled questions answered; hash 30/32,
32/32, 65/73. Floors sit one question under.

Related reading with a decline (issue 24; `RelevanceGate.related`, its floor tuned on the
calibration half): on the test half e5 and hash alike offer none to 29/32 unaddressed questions
(before: 0/32), keep it for 32/32 addressed ones, and for 7/8 of the held-out questions the
gate declines (4/8 with the coverage floor alone; rare terms and agreeing tracks keep q037,
q038 and q071). The floor asked is 90 %.
"""

from __future__ import annotations

import dataclasses

import pytest

from bench.eval_relevance import (
    CALIBRATION,
    TEST,
    GateRun,
    Item,
    load_items,
    rates,
    related_rates,
    run_gate,
    shows_related,
)
from retrieval.relevance import RelevanceGate
from tests.quality.conftest import E5Corpora

FLOORS = {  # answered, declined, held-out
    "e5": (0.96, 0.96, 0.87),
    "hash": (0.90, 0.96, 0.87),
}


@pytest.fixture(scope="module")
def items() -> list[Item]:
    return load_items(TEST)


@pytest.fixture(scope="module")
def runs(items: list[Item], e5_corpora: E5Corpora) -> dict[str, GateRun]:
    import asyncio

    data_dir = e5_corpora.data_dir("Eph")
    return {
        "hash": asyncio.run(run_gate("hash", items)),
        "e5": e5_corpora.run(
            lambda embedder: run_gate(e5_corpora.name, items, data_dir=data_dir, embedder=embedder)
        ),
    }


def test_the_halves_split_the_set_evenly_and_cover_every_kind() -> None:
    calibration, test = load_items(CALIBRATION), load_items(TEST)
    assert not {i.id for i in calibration} & {i.id for i in test}
    assert {i.question for i in calibration}.isdisjoint(i.question for i in test)
    for half in (calibration, test):
        addressed = [i for i in half if i.addressed]
        assert len(half) >= 60 and len(addressed) == len(half) / 2
        kinds = {i.kind for i in half if not i.addressed}
        assert {"offtopic", "religion", "near_theology", "verse"} <= kinds
        assert {i.lang for i in half if i.addressed} == {"zh", "en", "mixed"}


@pytest.mark.parametrize("embedder", sorted(FLOORS))
def test_unaddressed_questions_are_declined(
    runs: dict[str, GateRun], items: list[Item], embedder: str
) -> None:
    run = runs[embedder]
    _, _, declined, unaddressed = rates(run, items)
    assert declined / unaddressed >= FLOORS[embedder][1], (declined, unaddressed)
    for key in ("n002", "n004", "n016", "n024", "n031", "n060"):  # cooking, stocks, Islam …
        assert not run.decided[key], key


@pytest.mark.parametrize("embedder", sorted(FLOORS))
def test_addressed_questions_are_answered(
    runs: dict[str, GateRun], items: list[Item], embedder: str
) -> None:
    run = runs[embedder]
    answered, addressed, _, _ = rates(run, items)
    assert answered / addressed >= FLOORS[embedder][0], (answered, addressed)
    held = sum(run.held_out.values()) / len(run.held_out)
    assert held >= FLOORS[embedder][2], held


@pytest.mark.parametrize("embedder", sorted(FLOORS))
def test_an_english_question_held_in_translation_is_answered(
    runs: dict[str, GateRun], embedder: str
) -> None:
    """a053 asks in English about orphans; the passage says 孤儿 (CC-CEDICT's rendering), and
    no word of the question is in it as written."""
    assert runs[embedder].decided["a053"]
    assert runs[embedder].evidence["a053"].coverage > 0.25


def _dense_rule_decides(run: GateRun, key: str) -> bool:
    """The e5 gate answers `key`, and would not without its dense floor."""
    gate = RelevanceGate.for_embedder(run.model_id)
    evidence = run.evidence[key]
    without = dataclasses.replace(gate, dense_floor=None)
    return run.decided[key] and not without.addressed(evidence)


def test_e5_dense_floor_answers_half_covered_questions_close_in_meaning(
    runs: dict[str, GateRun], items: list[Item]
) -> None:
    run = runs["e5"]
    gate = RelevanceGate.for_embedder(run.model_id)
    assert gate.dense_floor is not None
    rescued = [i.id for i in items if _dense_rule_decides(run, i.id)]
    assert rescued, "no test question is answered through the dense floor"
    assert all(next(i for i in items if i.id == k).addressed for k in rescued), rescued
    for key in rescued:
        assert run.evidence[key].dense >= gate.dense_floor, (key, run.evidence[key])


def test_e5_dense_floor_keeps_half_covered_unrelated_questions_out(
    runs: dict[str, GateRun], items: list[Item]
) -> None:
    """Unaddressed questions half covered by some passage (past `dense_coverage`) are
    declined because that passage is not close enough in meaning."""
    run = runs["e5"]
    gate = RelevanceGate.for_embedder(run.model_id)
    assert gate.dense_floor is not None
    near = [
        i
        for i in items
        if not i.addressed and not run.evidence[i.id].refs
        if run.evidence[i.id].coverage >= gate.dense_coverage
    ]
    assert near, "no unaddressed test question comes near the dense rule"
    for i in near:
        assert not run.decided[i.id], (i.id, run.evidence[i.id])
        assert run.evidence[i.id].dense < gate.dense_floor, (i.id, run.evidence[i.id])


RELATED_NONE = 0.90  # unaddressed test questions offered no related reading (issue 24)
RELATED_NEAR_MISSES = 0.75  # held-out questions the gate declines that keep it (measured 7/8)


@pytest.mark.parametrize("embedder", sorted(FLOORS))
def test_declined_off_topic_questions_get_no_related_reading(
    runs: dict[str, GateRun], items: list[Item], embedder: str
) -> None:
    run = runs[embedder]
    gate = RelevanceGate.for_embedder(run.model_id)
    before, unaddressed, _, _ = related_rates(run, items, None)
    none, _, kept, addressed = related_rates(run, items, gate)
    assert none / unaddressed >= RELATED_NONE > before / unaddressed, (before, none)
    assert kept == addressed  # an addressed question the gate declined would keep it
    for i in items:  # what shares nothing with the ministry never gets any
        if i.kind in ("offtopic", "religion"):
            assert not shows_related(run, i.id, gate), (i.id, run.evidence[i.id])
    for key in ("n002", "n004", "n016", "n024", "n031", "n060"):  # cooking, stocks, Islam …
        assert not shows_related(run, key, gate), key


@pytest.mark.parametrize("embedder", sorted(FLOORS))
def test_near_misses_keep_their_related_reading(runs: dict[str, GateRun], embedder: str) -> None:
    """Held-out questions the samples do touch but the gate declines (呼求主名有什么用处？)."""
    run = runs[embedder]
    gate = RelevanceGate.for_embedder(run.model_id)
    misses = [k for k, answered in run.held_out.items() if not answered]
    assert misses, "the gate declines no held-out question: nothing to measure"
    kept = [k for k in misses if shows_related(run, k, gate)]
    assert len(kept) / len(misses) >= RELATED_NEAR_MISSES, (kept, misses)
    assert "q014" in kept  # 呼求主名有什么用处？
    assert "q037" in kept  # 在家带孩子很累…: three rare terms at coverage 0.30
