"""What the chat layer asks of the writers' room: one typed request per command (each command
is registered for its own request type, and its handler calls the one service method it needs),
the `Vote` every way of voting becomes, and the one admin rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from novel.cast import CastMap, CastView, Recap
from novel.member import Member
from novel.writer import Goal


@dataclass(frozen=True, slots=True)
class NextRound:
    pass


@dataclass(frozen=True, slots=True)
class Propose(Goal):
    """A member proposes the next chapter's goal; the winning one is what the model writes to."""


@dataclass(frozen=True, slots=True)
class ShowRound:
    """The chat's open round as it stands (phase, deadline, proposals, running count)."""


@dataclass(frozen=True, slots=True)
class ChooseOption:
    """`/chapter vote N`: option N (1-based, as on the ballot) of the chat's open round."""

    option: int


# How a vote was cast: a command, a ballot's button or key, a native poll. A poll's withdrawal
# takes back only a vote cast through the poll.
VoteSource = Literal["command", "button", "poll"]


@dataclass(frozen=True, slots=True)
class Vote:
    """A member's vote, however it was cast: option `option` (1-based) of round `round_id`
    ("" = the voter's chat's open round; a ballot names its round, so a stale ballot cannot
    vote in a newer one)."""

    round_id: str
    option: int
    voter: Member
    source: VoteSource = "command"


@dataclass(frozen=True, slots=True)
class Withdrawal:
    """A member takes back the vote they cast through `source` in round `round_id`."""

    round_id: str
    voter: Member
    source: VoteSource = "poll"


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


@dataclass(frozen=True, slots=True)
class NewStory:
    """`/novel new <title>`: the place it is asked in holds a story of its own from now on."""

    title: str


@dataclass(frozen=True, slots=True)
class ListStories:
    """`/novel list`: the chat's stories, and where each lives."""


# The requests by the service that answers them (rounds; chapters; the blueprint).
RoundRequest = NextRound | Propose | ShowRound | ChooseOption | CloseRound
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
StoryRequest = NewStory | ListStories
NovelRequest = RoundRequest | ChapterRequest | WorldRequest | StoryRequest


# Requests only an admin may make. The one rule: the commands' permissions ask it before
# parsing, and the room's handlers ask it again of every request they run (a caller that
# skipped the router's checks is refused the same way).
ADMIN_ONLY: tuple[type, ...] = (
    CloseRound,
    ReviseChapter,
    RollbackChapter,
    DeleteChapter,
    BlueprintSet,
    BlueprintEdit,
    BlueprintAccept,
    BlueprintReject,
    NewStory,
)


def needs_admin(request: object) -> bool:
    """True when only an admin may make `request`."""
    return isinstance(request, ADMIN_ONLY)


class Story(Protocol):
    """The story so far, read for the members (`novel.cast.StoryService`): typed results that
    `bot/` words and draws."""

    async def cast(self, chat_id: str) -> CastView: ...

    async def recap(self, chat_id: str, count: int) -> Recap: ...

    async def cast_map(self, chat_id: str) -> CastMap: ...
