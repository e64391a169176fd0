"""Why an `Answer` fell back to the passages, as typed facts: the model failed (`ModelFailed`,
with `LLMError.kind`) or answered with nothing (`EmptyModelAnswer`). `Answer.notice` carries
one; the chat layer (`bot.presenters.answer.notice_text`) words it above the excerpts, in the
reply and in `baibao ask --json`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ModelFailed:
    """The model failed after its retries; `kind` is the `LLMError.kind` (`timeout`,
    `rate_limited`, `unavailable`, `malformed` …)."""

    kind: str


@dataclass(frozen=True, slots=True)
class EmptyModelAnswer:
    """The model answered with nothing."""


Notice = ModelFailed | EmptyModelAnswer
