"""The relevance gate on tests/quality/relevance.yaml, on the real stack (App: Qdrant Edge,
SQLite, BM25, graph) with the hash embedder — so the gate decides on terms and verses alone
(`RelevanceGate.for_embedder` sets no dense floor for it).

Measured (bench/results/relevance.md): hash 61/64 addressed answered, 64/64 unaddressed
declined, 65/73 held-out labelled questions answered; e5 64/64, 64/64, 65/73. Before the
gate, 0 of 64 unaddressed questions were declined.
"""

from __future__ import annotations

import asyncio

import pytest

from bench.eval_relevance import GateRun, load_items, rates, run_gate

ANSWERED_FLOOR = 0.93
DECLINED_FLOOR = 0.97
HELD_OUT_FLOOR = 0.85


@pytest.fixture(scope="module")
def run() -> GateRun:
    return asyncio.run(run_gate("hash", load_items()))


def test_the_set_is_half_addressed_and_covers_every_kind() -> None:
    items = load_items()
    addressed = [i for i in items if i.addressed]
    assert len(items) >= 100 and abs(len(addressed) - len(items) / 2) <= 2
    kinds = {i.kind for i in items if not i.addressed}
    assert {"offtopic", "religion", "near_theology", "verse"} <= kinds
    assert {i.lang for i in items} == {"zh", "en", "mixed"}


def test_unaddressed_questions_are_declined(run: GateRun) -> None:
    _, _, declined, unaddressed = rates(run, load_items())
    assert declined / unaddressed >= DECLINED_FLOOR, (declined, unaddressed)
    for key in ("n001", "n002", "n003", "n023", "n031", "n060"):  # weather, cooking, code …
        assert not run.decided[key], key


def test_addressed_questions_are_answered(run: GateRun) -> None:
    answered, addressed, _, _ = rates(run, load_items())
    assert answered / addressed >= ANSWERED_FLOOR, (answered, addressed)
    held = sum(run.held_out.values()) / len(run.held_out)
    assert held >= HELD_OUT_FLOOR, held


def test_an_english_question_held_in_translation_is_answered(run: GateRun) -> None:
    """a053 asks in English about orphans; the passage says 孤儿 (CC-CEDICT's rendering), and
    no word of the question is in it as written."""
    assert run.decided["a053"]
    assert run.evidence["a053"].coverage > 0.25
