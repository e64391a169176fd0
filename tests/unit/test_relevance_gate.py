"""The relevance gate's rules (retrieval/relevance.py `RelevanceGate`), at their boundaries.

The dense rule is the one only e5 has (`DENSE_FLOORS`): a half-covered question is addressed
when a ministry passage is at least `dense_floor` close — and not when it is less close, when
it is covered less than `dense_coverage`, when it names a verse no passage cites, or when the
embedder has no calibrated floor (the hash fake, USE, remote models).
"""

from __future__ import annotations

import dataclasses

import pytest

from retrieval.embed.offline import E5Embedder
from retrieval.relevance import DENSE_FLOORS, Evidence, RelevanceGate

E5 = E5Embedder.spec.model_id
GATE = RelevanceGate.for_embedder(E5)
FLOOR = DENSE_FLOORS[E5]
STEP = 0.001  # well inside e5's similarity resolution, well outside float noise

# Half covered: past `dense_coverage`, short of `min_coverage`, too few specific terms for
# `partial_coverage` — only closeness in meaning can carry it.
HALF = Evidence(coverage=GATE.dense_coverage, specific=GATE.min_specific - 1)


def test_the_shipped_floor_belongs_to_e5_alone() -> None:
    assert GATE.dense_floor == FLOOR
    assert 0.0 < FLOOR < 1.0
    assert RelevanceGate.for_embedder("hash-256").dense_floor is None
    assert RelevanceGate.for_embedder("text-embedding-3-small").dense_floor is None


@pytest.mark.parametrize(
    ("dense", "addressed"),
    [
        (FLOOR + STEP, True),
        (FLOOR, True),  # the floor itself is close enough
        (FLOOR - STEP, False),
        (FLOOR - 0.1, False),
        (0.0, False),
    ],
)
def test_a_half_covered_question_is_addressed_only_at_or_above_the_floor(
    dense: float, addressed: bool
) -> None:
    assert GATE.addressed(dataclasses.replace(HALF, dense=dense)) is addressed


def test_closeness_alone_is_not_enough() -> None:
    very_close = dataclasses.replace(HALF, dense=0.99)
    assert GATE.addressed(very_close)
    assert not GATE.addressed(dataclasses.replace(very_close, coverage=GATE.dense_coverage - STEP))
    assert not GATE.addressed(dataclasses.replace(very_close, coverage=0.0))


def test_a_verse_no_passage_cites_is_not_rescued_by_closeness() -> None:
    about_an_uncited_verse = dataclasses.replace(HALF, dense=0.99, refs=("Eph.5.22",))
    assert not GATE.addressed(about_an_uncited_verse)
    cited = dataclasses.replace(about_an_uncited_verse, refs_cited=True)
    assert GATE.addressed(cited)


def test_without_a_floor_closeness_counts_for_nothing() -> None:
    no_floor = RelevanceGate.for_embedder("hash-256")
    assert not no_floor.addressed(dataclasses.replace(HALF, dense=1.0))


def test_the_term_rules_do_not_need_closeness() -> None:
    """Coverage alone, or partial coverage with specific terms, decides for any embedder."""
    for gate in (GATE, RelevanceGate.for_embedder("hash-256")):
        assert gate.addressed(Evidence(coverage=gate.min_coverage))
        assert not gate.addressed(Evidence(coverage=gate.min_coverage - STEP))
        partial = Evidence(coverage=gate.partial_coverage, specific=gate.min_specific)
        assert gate.addressed(partial)
        assert not gate.addressed(dataclasses.replace(partial, specific=gate.min_specific - 1))


# ---- related reading (issue 24): offered with a decline only when it shares meaning ---------

RELATED = GATE.related_coverage


@pytest.mark.parametrize(
    ("coverage", "related"),
    [
        (RELATED + STEP, True),
        (RELATED, True),  # the floor itself shares enough
        (RELATED - STEP, False),
        (0.0, False),
    ],
)
def test_related_reading_is_offered_only_at_or_above_the_floor(
    coverage: float, related: bool
) -> None:
    for gate in (GATE, RelevanceGate.for_embedder("hash-256")):
        evidence = Evidence(coverage=coverage)
        assert not gate.addressed(evidence)  # a declined question, below every answer rule
        assert gate.related(evidence) is related


def test_the_related_floor_sits_below_the_answer_rules() -> None:
    """Shares less than the gate needs to answer, so a near-miss keeps its related reading."""
    assert 0.0 < RELATED < GATE.min_coverage
    assert RELATED <= GATE.dense_coverage


def test_closeness_in_meaning_alone_offers_no_related_reading() -> None:
    """`今天天气怎么样？`: e5 finds some passage 0.86 close, and it shares no term."""
    assert not GATE.related(Evidence(coverage=0.0, dense=0.99))


def test_a_cited_verse_or_an_answer_rule_offers_it_whatever_the_coverage() -> None:
    assert GATE.related(Evidence(refs=("Eph.1.10",), refs_cited=True))
    answered = dataclasses.replace(HALF, coverage=GATE.partial_coverage, specific=GATE.min_specific)
    assert GATE.addressed(answered) and GATE.related(answered)  # a model's decline keeps it
    close = dataclasses.replace(HALF, dense=FLOOR)
    assert GATE.addressed(close) and GATE.related(close)


# A declined question the floor alone does not keep: below `related_coverage`, too few specific
# terms for any answer rule.
LOW = Evidence(coverage=GATE.partial_coverage, specific=1)


def test_rare_terms_held_together_offer_related_reading_whatever_the_coverage() -> None:
    """q037 在家带孩子很累…: three terms few passages hold, at coverage 0.30."""
    rare = Evidence(coverage=0.1, specific=GATE.related_specific)
    assert not GATE.addressed(rare) and GATE.related(rare)
    fewer = dataclasses.replace(rare, specific=GATE.related_specific - 1)
    assert not GATE.related(fewer)
    assert GATE.related_specific > GATE.min_specific  # stricter than the partial answer rule


@pytest.mark.parametrize(
    ("agreement", "coverage", "related"),
    [
        (GATE.related_agreement, GATE.partial_coverage, True),
        (GATE.related_agreement + 1, GATE.partial_coverage, True),
        (GATE.related_agreement - 1, GATE.partial_coverage, False),  # tracks that disagree
        # 创世记一章一节怎么解释？: two tracks agree on passages that hold none of its terms
        (GATE.related_agreement, 0.0, False),
        (GATE.related_agreement, GATE.partial_coverage - STEP, False),
    ],
)
def test_tracks_agreeing_offer_related_reading_only_with_a_good_part_of_the_terms(
    agreement: int, coverage: float, related: bool
) -> None:
    evidence = dataclasses.replace(LOW, agreement=agreement, coverage=coverage)
    assert not GATE.addressed(evidence)
    assert GATE.related(evidence) is related
    assert GATE.partial_coverage < GATE.related_coverage  # else the floor alone decides
