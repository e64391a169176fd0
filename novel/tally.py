"""The tally's rules, with no I/O: who wins."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from novel.results import Outcome, Proposal


def decide(proposals: Sequence[Proposal], tally: Mapping[int, int]) -> Outcome:
    """Most votes wins; among tied proposals the earliest; with no votes the earliest proposal;
    with no proposals nobody (the round closes without a chapter)."""
    ordered = sorted(proposals, key=lambda p: p.id)
    counts = tuple((p, tally.get(p.id, 0)) for p in ordered)
    if not ordered:
        return Outcome(None, "empty", counts)
    best = max(n for _, n in counts)
    if best == 0:
        return Outcome(ordered[0], "no_votes", counts)
    leaders = [p for p, n in counts if n == best]
    return Outcome(leaders[0], "tie" if len(leaders) > 1 else "votes", counts)
