"""ScriptedLLM: an in-process `LLM` that replays scripted replies (tests and benchmarks).

Each call to `complete` takes the next item of the script:

- a `str` → a reply of that text (no native citations; `[n]` markers stay inline);
- an `LLMResponse` → returned as is (segments with `ModelCitation`s imitate Claude);
- an `LLMError` → raised (imitates a model that failed after retries);
- a callable `(LLMRequest) -> str | LLMResponse` → called with the request.

When the script runs out the last item repeats when `repeat_last` is set, else it raises
`LLMError("unavailable")`. Every request is recorded in `requests`. With `on_delta` the text is
streamed in pieces of `delta_chars` characters, in order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import replace

from retrieval.ports import LLMError, LLMRequest, LLMResponse, OnDelta, TextSegment

ScriptItem = str | LLMResponse | LLMError | Callable[[LLMRequest], "str | LLMResponse"]


class ScriptedLLM:
    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        context_tokens: int = 200_000,
        model: str = "scripted",
        repeat_last: bool = False,
        delta_chars: int = 8,
    ) -> None:
        self._script: deque[ScriptItem] = deque(script)
        self._context_tokens = context_tokens
        self._model = model
        self._repeat_last = repeat_last
        self._delta_chars = max(1, delta_chars)
        self._last: ScriptItem | None = None
        self.requests: list[LLMRequest] = []

    @property
    def context_tokens(self) -> int:
        return self._context_tokens

    async def aclose(self) -> None:
        return None

    def push(self, *items: ScriptItem) -> None:
        self._script.extend(items)

    async def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        self.requests.append(request)
        item = self._next()
        if isinstance(item, LLMError):
            raise item
        if callable(item) and not isinstance(item, str | LLMResponse):
            item = item(request)
        response = (
            item
            if isinstance(item, LLMResponse)
            else LLMResponse(
                segments=(TextSegment(item),), model=self._model, stop_reason="end_turn"
            )
        )
        if not response.model:
            response = replace(response, model=self._model)
        if on_delta is not None:
            text = response.text
            for start in range(0, len(text), self._delta_chars):
                await on_delta(text[start : start + self._delta_chars])
        return response

    def _next(self) -> ScriptItem:
        if self._script:
            self._last = self._script.popleft()
            return self._last
        if self._repeat_last and self._last is not None:
            return self._last
        raise LLMError("unavailable", "script exhausted")
