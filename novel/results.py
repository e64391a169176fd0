"""What the round and chapter services return: plain typed results, no wording, no layout.

These are the writers' room's own facts, not storage rows: the repository (`novel.repo`) builds
them from its rows (`Proposal`, `ChapterVersion`, `ProposedChange`), and nothing here imports
it. `bot.presenters.novel` words each one. A refusal is raised as `kernel.refusal.Refused` (a
catalogue key and its fields) so a service can stop anywhere with one line; the presenter
words it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from kernel.i18n import Lang
from novel.consistency import Finding
from novel.evolve import BlueprintChange
from novel.phase import Phase

# ---- what the results are made of -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Proposal:
    """A member's proposed goal for the next chapter (the winner's is what gets written)."""

    id: int
    round_id: str
    user_id: str
    user_name: str
    title: str
    summary: str
    notes: str


@dataclass(frozen=True, slots=True)
class ChapterVersion:
    """One version of a chapter as members read it: its words, who wrote it, when and why."""

    version: int
    title: str
    text: str
    created_at: datetime
    author: str
    reason: str  # a code (generated, submitted, …) or a revision's own instructions


ChangeStatus = Literal["pending", "accepted", "rejected", "superseded"]


@dataclass(frozen=True, slots=True)
class ProposedChange:
    """A blueprint change a chapter proposed, and its fate."""

    id: int
    chapter_no: int
    change: BlueprintChange
    status: ChangeStatus
    decided_at: datetime | None = None
    decided_by: str = ""


WinReason = Literal["votes", "tie", "no_votes", "empty"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """A round's tally read by the rules (`novel.tally.decide`): the winner and every count."""

    winner: Proposal | None
    reason: WinReason
    counts: tuple[tuple[Proposal, int], ...]


@dataclass(frozen=True, slots=True)
class BallotOption:
    """One proposal on a ballot, with the members who voted for it (names, else ids)."""

    title: str
    summary: str
    proposer: str  # the proposer's name ("" when the platform gave none)
    voters: tuple[str, ...] = ()


# ---- rounds -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoundOpened:
    number: int  # the chapter the round is for
    minutes: int
    model_writes: bool  # False: the group submits the chapter itself


@dataclass(frozen=True, slots=True)
class ProposalSaved:
    title: str
    new: bool
    count: int
    minutes: int


@dataclass(frozen=True, slots=True)
class BallotView:
    """A ballot as it stands: open with the running count, or closed with the final one. Said
    in the round's language wherever it is shown; how it looks (buttons or a native poll,
    voters' names) is the chat layer's to decide."""

    round_id: str
    chat_id: str
    lang: Lang
    options: tuple[BallotOption, ...]
    minutes: int  # left to vote
    closed: bool = False

    @property
    def votes(self) -> int:
        return sum(len(o.voters) for o in self.options)


@dataclass(frozen=True, slots=True)
class CurrentRound:
    """The chat's open round as it stands: its phase, the chapter it is for, when the current
    phase closes (on the room's clock; None while the winner is written or waits for its
    text), the proposals with the running count, and the winner once there is one."""

    round_id: str
    phase: Phase
    number: int  # the chapter the round is for
    deadline: datetime | None
    minutes: int  # left until `deadline`
    options: tuple[BallotOption, ...]
    winner: str = ""  # the winning proposal's title (writing, pending)


@dataclass(frozen=True, slots=True)
class VoteCast:
    round_id: str
    option: int
    title: str
    change: Literal["new", "same", "changed"]
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class VoteRetracted:
    removed: bool  # False: nothing to withdraw (the vote came another way, or none)


@dataclass(frozen=True, slots=True)
class RoundEmpty:
    lang: Lang = "zh"  # the round's language (said to the chat the round was opened in)


@dataclass(frozen=True, slots=True)
class VotesClosed:
    outcome: Outcome
    number: int  # the chapter to be written
    model_writes: bool


@dataclass(frozen=True, slots=True)
class Abandoned:
    pass


# ---- chapters ---------------------------------------------------------------------------------

SaveHow = Literal["generated", "submitted", "regenerated", "uploaded"]


@dataclass(frozen=True, slots=True)
class ChapterSaved:
    number: int
    title: str
    text: str
    chunks: int
    version: int
    how: SaveHow
    findings: Sequence[Finding] = ()
    changes: Sequence[ProposedChange] = ()


StallReason = Literal["no_model", "llm", "error", "busy", "no_model_retry"]


@dataclass(frozen=True, slots=True)
class WriteStalled:
    """The chapter was not written; the round waits (retry with /chapter next, or submit)."""

    reason: StallReason
    number: int
    title: str
    kind: str = ""  # the model error's kind


@dataclass(frozen=True, slots=True)
class ChapterView:
    number: int
    version: ChapterVersion


@dataclass(frozen=True, slots=True)
class History:
    number: int
    current: int
    versions: Sequence[ChapterVersion]


@dataclass(frozen=True, slots=True)
class RolledBack:
    number: int
    version: int


@dataclass(frozen=True, slots=True)
class Deleted:
    number: int
    renumbered: int


@dataclass(frozen=True, slots=True)
class Exported:
    title: str
    chapters: int
    chars: int
    filename: str
    data: bytes
    mime: str


# ---- blueprint --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BlueprintShown:
    json: str
    lines: Sequence[str]
    pending: Sequence[ProposedChange] = ()


@dataclass(frozen=True, slots=True)
class BlueprintSaved:
    title: str
    characters: int


@dataclass(frozen=True, slots=True)
class BlueprintEdited:
    field: str
    value: str


@dataclass(frozen=True, slots=True)
class ChangesDecided:
    accepted: bool
    changes: Sequence[ProposedChange]
    # (change, why it no longer applies: a BlueprintError, worded by the presenter, or another
    # ValueError shown as it reads)
    skipped: Sequence[tuple[ProposedChange, ValueError]] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class BlueprintHistoryView:
    entries: Sequence[tuple[str, str, str, str]]  # (when, who, reason, title)
    decisions: Sequence[ProposedChange] = ()  # accepted and rejected proposals, newest first


# ---- progress and announcements -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Writing:
    """The model is writing chapter `number` (`resumed`: after a restart)."""

    number: int
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class Revising:
    number: int


# While a chapter is written: a notice, then the draft so far (plain text) as it streams.
Steps = Callable[[Writing | Revising | str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ClosedAndWritten:
    """`/chapter close` ended the vote and the model wrote the winner at once."""

    closed: VotesClosed
    written: ChapterSaved | WriteStalled


# What `/chapter close` can come to, by the phase it closes.
Closed = BallotView | RoundEmpty | VotesClosed | ClosedAndWritten | Abandoned


# ---- stories ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoryOpened:
    """`/novel new`: the place it was asked in holds a story of its own now."""

    title: str
    place_name: str  # "" when the chat layer did not know the place's name


@dataclass(frozen=True, slots=True)
class StoryEntry:
    """One story of a chat as `/novel list` shows it: its title (its blueprint's), where it
    lives, how far it got, and whether the place asking uses it."""

    title: str
    place: str  # the channel, thread or topic that holds it; "" = the chat's own story
    place_name: str
    chapters: int
    phase: Phase | None  # its open round's phase; None without one
    here: bool  # commands in the place that asked go to this story


@dataclass(frozen=True, slots=True)
class StoryList:
    """The stories of a chat: its own first, then the places' in the order they were made."""

    stories: tuple[StoryEntry, ...]
