"""ClaudeLLM: the Anthropic Messages API with native citations, through the official SDK.

Retrieved passages travel as `document` content blocks (plain-text source, citations enabled)
in the user turn before the question; Claude answers with text blocks whose `citations` name
the document (0-based `document_index` in the request, mapped back to our 1-based
`SourceDocument.index`) and quote the `cited_text`. Streaming uses `create(stream=True)` and
assembles `text_delta` and `citations_delta` per content block.

The SDK's own retries are off (`max_retries=0`): `retrieval.llm.base.with_retries` retries
every adapter the same way.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval.llm.base import (
    RetryingLLM,
    RetryPolicy,
    Sleep,
    Transient,
    kind_for_status,
    retry_after_seconds,
)
from retrieval.ports import (
    LLMError,
    LLMRequest,
    LLMResponse,
    ModelCitation,
    OnDelta,
    SourceDocument,
    TextSegment,
)

# The current Sonnet (checked against the Claude model overview, November 2026).
DEFAULT_MODEL = "claude-sonnet-5-5"

# Claude 5 models reject non-default sampling parameters with HTTP 400; older ones accept them.
_SAMPLING_OK = re.compile(r"^claude-(3|[a-z]+-4)(\b|-|\.)")
_LARGE_WINDOW = re.compile(r"^claude-([a-z]+-5|[a-z]+-4-[6-9]|mythos|fable)")


def context_window(model: str) -> int:
    """The model's context window in tokens (1M for Claude 5 and Opus/Sonnet 4.6+)."""
    return 1_000_000 if _LARGE_WINDOW.match(model) else 200_000


class ClaudeLLM(RetryingLLM):
    """`retrieval.ports.LLM` over Anthropic's Messages API (or any server speaking it)."""

    native_citations = True
    name = "claude"

    def __init__(
        self,
        api_key: str,
        model: str = DEFAULT_MODEL,
        *,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        semaphore: asyncio.Semaphore | None = None,
        context_tokens: int = 0,
        policy: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        import anthropic  # lazy: only this module knows the SDK

        self._sdk = anthropic
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s
        )
        model = model or DEFAULT_MODEL
        super().__init__(
            model,
            context_tokens=context_tokens or context_window(model),
            timeout_s=timeout_s,
            max_retries=max_retries,
            semaphore=semaphore,
            policy=policy,
            sleep=sleep,
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def _attempt(self, request: LLMRequest, on_delta: OnDelta | None) -> LLMResponse:
        params = self._params(request)
        if on_delta is None:
            return await self._once(params, request.documents)
        return await self._streamed(params, request.documents, on_delta)

    # ---- request ------------------------------------------------------------------------

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [
            {"role": m.role, "content": m.content} for m in request.messages
        ]
        if request.documents:
            if not messages or messages[-1]["role"] != "user":
                messages.append({"role": "user", "content": ""})
            question = messages[-1]["content"]
            blocks: list[dict[str, Any]] = [_document_block(d) for d in request.documents]
            if question:
                blocks.append({"type": "text", "text": question})
            messages[-1] = {"role": "user", "content": blocks}
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
        }
        if request.system:
            params["system"] = request.system
        if _SAMPLING_OK.match(self.model):
            # The current SDK no longer has a `temperature` argument; older models still
            # accept the field on the wire.
            params["extra_body"] = {"temperature": request.temperature}
        return params

    # ---- one attempt --------------------------------------------------------------------

    async def _once(
        self, params: dict[str, Any], documents: Sequence[SourceDocument]
    ) -> LLMResponse:
        try:
            message = await self._client.messages.create(**params)
        except Exception as err:
            failure = self._failure(err, emitted=False)
            if failure is None:
                raise
            raise failure from err
        return _parse_message(message, documents)

    async def _streamed(
        self, params: dict[str, Any], documents: Sequence[SourceDocument], on_delta: OnDelta
    ) -> LLMResponse:
        state = _StreamState()
        try:
            stream = await self._client.messages.create(**params, stream=True)
            async for event in stream:
                await state.take(event, on_delta)
        except (Transient, LLMError):
            raise
        except Exception as err:
            failure = self._failure(err, emitted=state.emitted)
            if failure is None:
                raise
            raise failure from err
        blocks, meta = state.blocks, state.meta
        segments = tuple(
            TextSegment("".join(b["text"]), _citations(b["citations"], documents))
            for _, b in sorted(blocks.items())
            if b["type"] == "text"
        )
        if not segments:
            raise LLMError("malformed", "stream ended without a text block")
        return LLMResponse(
            segments=segments,
            model=meta["model"] or self.model,
            stop_reason=meta["stop_reason"],
            input_tokens=meta["input"],
            output_tokens=meta["output"],
            native_citations=True,
        )

    # ---- errors -------------------------------------------------------------------------

    def _failure(self, err: Exception, *, emitted: bool) -> Exception | None:
        """SDK exception → Transient (retry) or LLMError (final).

        Once text has reached the caller a retry would repeat it, so every failure is final.
        """
        sdk = self._sdk
        kind: str | None
        retry_after: float | None = None
        if isinstance(err, sdk.APITimeoutError):
            kind = "timeout"
        elif isinstance(err, sdk.APIConnectionError):
            kind = "unavailable"
        elif isinstance(err, sdk.APIStatusError):
            kind = kind_for_status(err.status_code)
            if kind is None:
                kind = _kind_for_error_type(getattr(err, "type", None))
            retry_after = retry_after_seconds(dict(err.response.headers))
            if kind is None:
                return LLMError("unavailable", f"HTTP {err.status_code}: {err.message}"[:300])
        elif isinstance(err, sdk.APIResponseValidationError | ValueError | KeyError):
            return LLMError("malformed", f"{type(err).__name__}: {err}"[:300])
        else:
            return None  # a bug, not a model failure: let it surface as it is
        if emitted:
            return LLMError(kind, "failed mid-stream")
        return Transient(kind, str(err)[:200], retry_after)


def _kind_for_error_type(error_type: object) -> str | None:
    """An `error` SSE event arrives with HTTP 200; its body's type says what happened."""
    return {
        "overloaded_error": "unavailable",
        "api_error": "unavailable",
        "rate_limit_error": "rate_limited",
        "timeout_error": "timeout",
    }.get(str(error_type))


def _document_block(doc: SourceDocument) -> dict[str, Any]:
    return {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": doc.text},
        "title": doc.title,
        "citations": {"enabled": True},
    }


def _citations(raw: list[Any], documents: Sequence[SourceDocument]) -> tuple[ModelCitation, ...]:
    out: list[ModelCitation] = []
    docs = list(documents)
    for c in raw:
        index = getattr(c, "document_index", None)
        if index is None and isinstance(c, dict):
            index = c.get("document_index")
        if not isinstance(index, int):
            continue  # search-result / web citations do not point at our documents
        cited = getattr(c, "cited_text", None)
        if cited is None and isinstance(c, dict):
            cited = c.get("cited_text")
        # Out-of-range indexes keep a number no passage has, so the verifier rejects them.
        number = docs[index].index if 0 <= index < len(docs) else len(docs) + 1 + abs(index)
        out.append(ModelCitation(document_index=number, cited_text=str(cited or "")))
    return tuple(out)


def _parse_message(message: Any, documents: Sequence[SourceDocument]) -> LLMResponse:
    if isinstance(message, str | bytes):
        raise LLMError("malformed", "response is not a JSON message")
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise LLMError("malformed", "message without a content list")
    segments: list[TextSegment] = []
    for block in content:
        if getattr(block, "type", None) != "text":
            continue  # thinking blocks and the like carry no answer text
        text = getattr(block, "text", None)
        if not isinstance(text, str):
            raise LLMError("malformed", "text block without text")
        segments.append(
            TextSegment(text, _citations(getattr(block, "citations", None) or [], documents))
        )
    if not segments:
        raise LLMError("malformed", "no text block in the reply")
    usage = getattr(message, "usage", None)
    return LLMResponse(
        segments=tuple(segments),
        model=str(getattr(message, "model", "") or ""),
        stop_reason=str(getattr(message, "stop_reason", "") or ""),
        input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        native_citations=True,
    )


__all__ = ["DEFAULT_MODEL", "ClaudeLLM", "context_window"]


@dataclass
class _StreamState:
    """What a streamed answer has said so far: its content blocks by index, the model, stop
    reason and token counts, and whether any text went out to `on_delta` yet."""

    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(
        default_factory=lambda: {"model": "", "stop_reason": "", "input": 0, "output": 0}
    )
    emitted: bool = False

    async def take(self, event: Any, on_delta: OnDelta) -> None:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            message = event.message
            self.meta["model"] = getattr(message, "model", "") or ""
            usage = getattr(message, "usage", None)
            self.meta["input"] = int(getattr(usage, "input_tokens", 0) or 0)
        elif kind == "content_block_start":
            block = event.content_block
            self.blocks[event.index] = {
                "type": getattr(block, "type", ""),
                "text": [getattr(block, "text", "") or ""],
                "citations": list(getattr(block, "citations", None) or []),
            }
        elif kind == "content_block_delta":
            await self._delta(event, on_delta)
        elif kind == "message_delta":
            self.meta["stop_reason"] = getattr(event.delta, "stop_reason", "") or ""
            usage = getattr(event, "usage", None)
            self.meta["output"] = int(getattr(usage, "output_tokens", 0) or 0)

    async def _delta(self, event: Any, on_delta: OnDelta) -> None:
        delta = event.delta
        slot = self.blocks.setdefault(event.index, {"type": "text", "text": [], "citations": []})
        if delta.type == "text_delta":
            slot["text"].append(delta.text)
            if slot["type"] == "text" and delta.text:
                self.emitted = True
                await on_delta(delta.text)
        elif delta.type == "citations_delta":
            slot["citations"].append(delta.citation)
