"""The writers' room's own settings (the composition root fills them from `bot.settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# The longest chapter text a member may submit or upload: the command's parameter refuses longer
# typed text, the chapter service longer uploads (`max_upload_chars`).
MAX_CHAPTER_CHARS = 60_000


@dataclass(frozen=True, slots=True)
class NovelSettings:
    openers: Literal["admins", "members"] = "admins"  # who may open a round
    proposal_minutes: float = 60.0
    vote_minutes: float = 60.0
    max_blueprint_bytes: int = 256_000
    max_upload_chars: int = MAX_CHAPTER_CHARS  # an uploaded chapter text
    show_inline_chars: int = 3_500  # longer chapters are attached as .md
    plot_token_budget: int = 3_000  # L2 retrieved chunks in the prompt
    chapter_max_tokens: int = 4_096
    consistency_model: bool = True  # the LLM-judged consistency pass when a model is configured
