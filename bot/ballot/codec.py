"""How a vote is spelled on each platform form of a ballot, and read back: one definition per
form, encoding and decoding together (discord.py's `DynamicItem`: the class that builds a
custom_id declares its template and parses it back).

- a button (Discord's custom_id) and a keyboard key (Telegram's callback data) are spelled the
  same way, `vote:<round id>:<option>`: `VoteButton`. The transports shorten a long one with
  their `ActionTable`, and the router hands the payload back to `VoteButton.parse` (the
  registry's `vote` action);
- a native poll (Telegram) carries no action at all: its options are the ballot's labels in
  order, and its answer names the poll and the options' 0-based indexes (`PollAnswer`).
  `PollVote` reads them as ballot options (1-based); the poll's id leads to the round through
  the posted-ballot table (`bot.ballot.store`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Self

from bot.registry import PollAnswer

MAX_OPTION = 1000  # no ballot has more options; a larger number is garbage


@dataclass(frozen=True, slots=True)
class VoteButton:
    """Option `option` (1-based, as printed on the ballot) of round `round_id`'s ballot."""

    PREFIX: ClassVar[str] = "vote"
    # What follows `vote:`; ASCII digits only (a full-width ２ is not a number here).
    TEMPLATE: ClassVar[re.Pattern[str]] = re.compile(r"(?P<round_id>.*):(?P<option>[0-9]+)")

    round_id: str
    option: int

    @property
    def action(self) -> str:
        """The button's custom_id / the key's callback data."""
        return f"{self.PREFIX}:{self.round_id}:{self.option}"

    @classmethod
    def parse(cls, payload: str) -> Self | None:
        """What followed `vote:` → the vote it encodes; None for anything else (garbage, an
        option out of range)."""
        match = cls.TEMPLATE.fullmatch(payload)
        if match is None:
            return None
        option = int(match["option"])
        if not 0 < option <= MAX_OPTION:
            return None
        return cls(match["round_id"], option)

    @classmethod
    def read(cls, action: str) -> Self | None:
        """A whole action (`vote:<round>:<n>`) → the vote; None for another action."""
        prefix, _, payload = action.partition(":")
        return cls.parse(payload) if prefix == cls.PREFIX else None


@dataclass(frozen=True, slots=True)
class PollVote:
    """A native poll's answer as ballot options: the poll's own option i (0-based) is the
    ballot's option i + 1; no option means the member withdrew their answer."""

    poll_id: str
    options: tuple[int, ...]  # 1-based, as on the ballot

    @classmethod
    def of(cls, answer: PollAnswer) -> Self:
        return cls(answer.poll_id, tuple(i + 1 for i in answer.option_ids))

    @property
    def withdrawn(self) -> bool:
        return not self.options
