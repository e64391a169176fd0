"""Weighted reciprocal-rank fusion (pure).

score(d) = Σ_tracks weight[t] / (k + rank_t(d)), ranks 1-based. A track with weight 0 (or no
weight) contributes nothing and its ranks are not reported. Ties break by the best single rank,
then by how many tracks found the id, then by id, so the output is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Fused = tuple[str, float, dict[str, int]]


def weighted_rrf(
    rankings: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: float = 60
) -> list[Fused]:
    if k < 0:
        raise ValueError("k must be non-negative")
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for track in sorted(rankings):
        w = float(weights.get(track, 0.0))
        if w <= 0:
            continue
        seen: set[str] = set()
        rank = 0
        for doc in rankings[track]:
            if doc in seen:
                continue
            seen.add(doc)
            rank += 1
            scores[doc] = scores.get(doc, 0.0) + w / (k + rank)
            ranks.setdefault(doc, {})[track] = rank
    return sorted(
        ((d, s, ranks[d]) for d, s in scores.items()),
        key=lambda x: (-x[1], min(x[2].values()), -len(x[2]), x[0]),
    )
