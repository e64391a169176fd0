"""The tally's rules, with no I/O: who wins, how the count reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from novel.repo import ProposalRow

Reason = Literal["votes", "tie", "no_votes", "empty"]


@dataclass(frozen=True, slots=True)
class Outcome:
    winner: ProposalRow | None
    reason: Reason
    counts: tuple[tuple[ProposalRow, int], ...]


def decide(proposals: Sequence[ProposalRow], tally: Mapping[int, int]) -> Outcome:
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


def tally_lines(counts: Sequence[tuple[ProposalRow, int]], lang: str) -> list[str]:
    unit = " vote(s)" if lang == "en" else " 票"
    return [f"{i}. {p.title} — {n}{unit}" for i, (p, n) in enumerate(counts, start=1)]


def option_label(p: ProposalRow, limit: int = 80) -> str:
    return p.title if len(p.title) <= limit else p.title[: limit - 1] + "…"
