from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.fuse import weighted_rrf

ids = st.lists(st.sampled_from(list("abcdefgh")), unique=True, max_size=8)
tracks = st.dictionaries(st.sampled_from(["dense", "graph", "keyword"]), ids, min_size=1)


def test_basic_scores_and_ranks() -> None:
    out = weighted_rrf(
        {"dense": ["a", "b"], "keyword": ["b", "c"]}, {"dense": 0.5, "keyword": 0.2}, k=60
    )
    assert [d for d, _, _ in out] == ["b", "a", "c"]
    assert out[0][2] == {"dense": 2, "keyword": 1}
    assert abs(out[0][1] - (0.5 / 62 + 0.2 / 61)) < 1e-12


def test_duplicates_in_a_ranking_count_once() -> None:
    out = weighted_rrf({"t": ["a", "a", "b"]}, {"t": 1.0}, k=0)
    assert out == [("a", 1.0, {"t": 1}), ("b", 0.5, {"t": 2})]


def test_ties_are_deterministic() -> None:
    out = weighted_rrf({"x": ["b"], "y": ["a"]}, {"x": 1.0, "y": 1.0})
    assert [d for d, _, _ in out] == ["a", "b"]


@settings(max_examples=40, deadline=None)
@given(tracks, st.floats(0.1, 1.0))
def test_first_everywhere_wins(rankings: dict[str, list[str]], w: float) -> None:
    rankings = {t: ["z", *r] for t, r in rankings.items()}
    out = weighted_rrf(rankings, dict.fromkeys(rankings, w))
    assert out[0][0] == "z"


@settings(max_examples=40, deadline=None)
@given(tracks, st.sampled_from(["dense", "graph", "keyword"]))
def test_zero_weight_removes_track(rankings: dict[str, list[str]], off: str) -> None:
    weights = {"dense": 0.5, "graph": 0.3, "keyword": 0.2, off: 0.0}
    out = weighted_rrf(rankings, weights)
    without = weighted_rrf({t: r for t, r in rankings.items() if t != off}, weights)
    assert out == without
    assert all(off not in ranks for _, _, ranks in out)


@settings(max_examples=40, deadline=None)
@given(
    tracks, st.sampled_from(["dense", "graph", "keyword"]), st.sampled_from([0.0, 0.1, 0.5, 2.0])
)
def test_monotonic_in_weights(rankings: dict[str, list[str]], track: str, extra: float) -> None:
    base = {"dense": 0.5, "graph": 0.3, "keyword": 0.2}
    before = {d: s for d, s, _ in weighted_rrf(rankings, base)}
    after = {d: s for d, s, _ in weighted_rrf(rankings, {**base, track: base[track] + extra})}
    for d, s in before.items():
        assert after[d] >= s - 1e-12
        if d in rankings.get(track, []) and extra > 0:
            assert after[d] > s
    # a doc's gain is largest when the boosted track ranks it higher
    ranked = rankings.get(track, [])
    gains = [after[d] - before[d] for d in ranked]
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(gains))
