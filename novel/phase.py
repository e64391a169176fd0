"""A round's phases and the one function that moves between them.

```
proposal ──close_proposals──▶ voting ──close_votes──▶ writing ──save──▶ done
                                 │                     │  ▲
                           no_proposals             stall  write          (retry, or a
                                 ▼                     ▼  │                submitted text)
                               empty                 pending ──abandon──▶ abandoned
```

`transition(phase, event)` is the rule; `NovelRepo.advance` applies it as a compare-and-set in
SQLite (only a round still in one of `sources(event)` moves), so two closers never both win.
"""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    PROPOSAL = "proposal"
    VOTING = "voting"
    WRITING = "writing"  # the winning goal is being written (by the model, or a text is saved)
    PENDING = "pending"  # the winner waits for a retry or a submitted text
    DONE = "done"
    EMPTY = "empty"  # closed without proposals
    ABANDONED = "abandoned"


# At most one round per novel is in one of these (a partial unique index in SQLite).
OPEN_PHASES: tuple[Phase, ...] = (Phase.PROPOSAL, Phase.VOTING, Phase.WRITING, Phase.PENDING)


class Event(StrEnum):
    CLOSE_PROPOSALS = "close_proposals"
    NO_PROPOSALS = "no_proposals"
    CLOSE_VOTES = "close_votes"
    STALL = "stall"  # no model, a failed write, or a restart mid-write
    WRITE = "write"  # retry the model, or save a submitted text
    SAVE = "save"
    ABANDON = "abandon"


_MOVES: dict[Event, tuple[frozenset[Phase], Phase]] = {
    Event.CLOSE_PROPOSALS: (frozenset({Phase.PROPOSAL}), Phase.VOTING),
    Event.NO_PROPOSALS: (frozenset({Phase.VOTING}), Phase.EMPTY),
    Event.CLOSE_VOTES: (frozenset({Phase.VOTING}), Phase.WRITING),
    Event.STALL: (frozenset({Phase.WRITING}), Phase.PENDING),
    Event.WRITE: (frozenset({Phase.PENDING}), Phase.WRITING),
    Event.SAVE: (frozenset({Phase.WRITING}), Phase.DONE),
    Event.ABANDON: (frozenset({Phase.PENDING}), Phase.ABANDONED),
}


class IllegalMove(ValueError):
    def __init__(self, phase: Phase, event: Event) -> None:
        super().__init__(f"{event} is not allowed in phase {phase}")
        self.phase = phase
        self.event = event


def transition(phase: Phase, event: Event) -> Phase:
    """The phase after `event`; IllegalMove when `event` cannot happen in `phase`."""
    allowed, target = _MOVES[event]
    if phase not in allowed:
        raise IllegalMove(phase, event)
    return target


def sources(event: Event) -> tuple[Phase, ...]:
    """The phases `event` may leave from (for the compare-and-set)."""
    return tuple(sorted(_MOVES[event][0]))
