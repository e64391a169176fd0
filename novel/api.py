"""The novel service's typed requests and its one-method Protocol, as the router sees them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from novel.cast import CastMap, CastView, Recap
from novel.member import Member
from novel.results import Progress, Result
from novel.writer import Goal


@dataclass(frozen=True, slots=True)
class NextRound:
    pass


@dataclass(frozen=True, slots=True)
class Propose(Goal):
    """A member proposes the next chapter's goal; the winning one is what the model writes to."""


@dataclass(frozen=True, slots=True)
class Vote:
    option: int  # 1-based option number on the ballot
    round_id: str = ""  # set by button clicks so stale ballots cannot vote in a new round


@dataclass(frozen=True, slots=True)
class PollAnswer:
    """A native poll's answer as the platform reports it: no chat, only the poll's id (mapped
    to its round in SQLite). `options` are 1-based; empty = the member retracted the vote."""

    poll_id: str
    options: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class BallotSettings:
    """Per chat: `style` poll | keyboard (one ballot, never both); `voters` shown | hidden."""

    style: str | None = None
    voters: str | None = None


@dataclass(frozen=True, slots=True)
class SubmitChapter:
    """The group writes the winning goal's chapter itself (text typed or uploaded)."""

    text: str


@dataclass(frozen=True, slots=True)
class CloseRound:
    pass


@dataclass(frozen=True, slots=True)
class ShowChapter:
    chapter: int | None = None  # None = latest


@dataclass(frozen=True, slots=True)
class ReviseChapter:
    chapter: int
    instructions: str = ""
    text: str | None = None  # an uploaded replacement text


@dataclass(frozen=True, slots=True)
class ChapterHistory:
    chapter: int


@dataclass(frozen=True, slots=True)
class RollbackChapter:
    chapter: int
    version: int


@dataclass(frozen=True, slots=True)
class DeleteChapter:
    chapter: int | None = None  # None = the last chapter
    confirm: bool = False  # required to delete an earlier chapter (renumbers the rest)


@dataclass(frozen=True, slots=True)
class BlueprintShow:
    pass


@dataclass(frozen=True, slots=True)
class BlueprintSet:
    data: bytes  # an uploaded JSON file


@dataclass(frozen=True, slots=True)
class BlueprintEdit:
    field: str  # dotted path, e.g. "characters.林远.status"
    value: str


@dataclass(frozen=True, slots=True)
class BlueprintAccept:
    ids: tuple[int, ...] = ()  # empty = every pending change


@dataclass(frozen=True, slots=True)
class BlueprintReject:
    ids: tuple[int, ...] = ()  # empty = every pending change


@dataclass(frozen=True, slots=True)
class BlueprintHistory:
    pass


@dataclass(frozen=True, slots=True)
class Export:
    fmt: str = "md"  # md | epub


# The requests by the service that answers them (rounds; chapters; the blueprint).
RoundRequest = NextRound | Propose | Vote | PollAnswer | BallotSettings | CloseRound
ChapterRequest = (
    SubmitChapter
    | ShowChapter
    | ReviseChapter
    | ChapterHistory
    | RollbackChapter
    | DeleteChapter
    | Export
)
WorldRequest = (
    BlueprintShow
    | BlueprintSet
    | BlueprintEdit
    | BlueprintAccept
    | BlueprintReject
    | BlueprintHistory
)
NovelRequest = RoundRequest | ChapterRequest | WorldRequest


# Requests only an admin may make. The one rule: the commands' permissions ask it
# (`bot.commands.novel`), and the service asks it again for callers that skipped the router.
ADMIN_ONLY: tuple[type, ...] = (
    CloseRound,
    ReviseChapter,
    RollbackChapter,
    DeleteChapter,
    BlueprintSet,
    BlueprintEdit,
    BlueprintAccept,
    BlueprintReject,
)


def needs_admin(request: NovelRequest) -> bool:
    """True when only an admin may make `request` (changing a chat's ballot settings too)."""
    if isinstance(request, BallotSettings):
        return request.style is not None or request.voters is not None
    return isinstance(request, ADMIN_ONLY)


class Novels(Protocol):
    async def handle(
        self, member: Member, request: NovelRequest, progress: Progress | None = None
    ) -> Result: ...


class Story(Protocol):
    """The story so far, read for the members (`novel.cast.StoryService`): typed results that
    `bot/` words and draws."""

    async def cast(self, chat_id: str) -> CastView: ...

    async def recap(self, chat_id: str, count: int) -> Recap: ...

    async def cast_map(self, chat_id: str) -> CastMap: ...
