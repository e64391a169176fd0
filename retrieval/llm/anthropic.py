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

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import anthropic
from anthropic.types import (
    CitationCharLocation,
    CitationContentBlockLocation,
    CitationPageLocation,
    Message,
    MessageDeltaUsage,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStreamEvent,
    TextBlock,
    TextCitation,
    Usage,
)
from anthropic.types.raw_message_delta_event import Delta

from retrieval.llm.base import (
    RetryingLLM,
    SdkErrors,
    StatusError,
    kind_for_status,
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


class ClaudeLLM(RetryingLLM[anthropic.AsyncAnthropic]):
    """`retrieval.ports.LLM` over Anthropic's Messages API (or any server speaking it)."""

    native_citations = True
    name = "claude"
    default_model = DEFAULT_MODEL
    errors = SdkErrors.of(anthropic)

    def _open(
        self, api_key: str | None, base_url: str | None, timeout_s: float
    ) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s
        )

    def _context_window(self, model: str) -> int:
        return context_window(model)

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
        with self._sdk_errors():
            message = await self._client.messages.create(**params)
        return _parse_message(message, documents)

    async def _streamed(
        self, params: dict[str, Any], documents: Sequence[SourceDocument], on_delta: OnDelta
    ) -> LLMResponse:
        state = _StreamState()
        with self._sdk_errors(lambda: state.emitted):
            stream = await self._client.messages.create(**params, stream=True)
            async for event in stream:
                await state.take(event, on_delta)
        blocks, meta = state.blocks, state.meta
        segments = tuple(
            TextSegment("".join(b.text), _citations(b.citations, documents))
            for _, b in sorted(blocks.items())
            if b.is_text
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

    def _status_kind(self, err: StatusError) -> str | None:
        kind = kind_for_status(err.status_code)
        if kind is None and isinstance(err, anthropic.APIStatusError):
            kind = _kind_for_error_type(err.type)
        return kind


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


# The citation kinds that point at a document of the request.
_DOCUMENT_CITATIONS = (CitationCharLocation, CitationPageLocation, CitationContentBlockLocation)


def _citations(
    raw: Iterable[TextCitation], documents: Sequence[SourceDocument]
) -> tuple[ModelCitation, ...]:
    out: list[ModelCitation] = []
    docs = list(documents)
    for c in raw:
        if not isinstance(c, _DOCUMENT_CITATIONS):
            continue  # search-result / web citations do not point at our documents
        index = c.document_index
        if not isinstance(index, int):
            continue  # the field was missing or not a number
        cited = c.cited_text
        # Out-of-range indexes keep a number no passage has, so the verifier rejects them.
        number = docs[index].index if 0 <= index < len(docs) else len(docs) + 1 + abs(index)
        out.append(ModelCitation(document_index=number, cited_text=str(cited or "")))
    return tuple(out)


def _parse_message(message: Message, documents: Sequence[SourceDocument]) -> LLMResponse:
    # The SDK builds its models without validation: a field the body lacks is None, one of
    # the wrong shape is left as it came, and a block of unknown type becomes the union's
    # first member; so each level is checked by its class and its `type`.
    if isinstance(message, str | bytes):
        raise LLMError("malformed", "response is not a JSON message")
    if not isinstance(message, Message) or not isinstance(message.content, list):
        raise LLMError("malformed", "message without a content list")
    segments: list[TextSegment] = []
    for block in message.content:
        if not _is_text(block):
            continue  # thinking blocks and the like carry no answer text
        if not isinstance(block.text, str):
            raise LLMError("malformed", "text block without text")
        segments.append(TextSegment(block.text, _citations(block.citations or [], documents)))
    if not segments:
        raise LLMError("malformed", "no text block in the reply")
    input_tokens, output_tokens = _usage_counts(message.usage)
    return LLMResponse(
        segments=tuple(segments),
        model=str(message.model or ""),
        stop_reason=str(message.stop_reason or ""),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        native_citations=True,
    )


def _is_text(block: object) -> TypeGuard[TextBlock]:
    return isinstance(block, TextBlock) and block.type == "text"


def _usage_counts(usage: Usage | None) -> tuple[int, int]:
    """(input, output) tokens; 0 for whatever the server did not count."""
    if not isinstance(usage, Usage):
        return 0, 0
    return int(usage.input_tokens or 0), int(usage.output_tokens or 0)


__all__ = ["DEFAULT_MODEL", "ClaudeLLM", "context_window"]


@dataclass
class _Block:
    """One content block of a streamed answer; only text blocks become segments."""

    is_text: bool = True
    text: list[str] = field(default_factory=list)
    citations: list[TextCitation] = field(default_factory=list)

    @classmethod
    def opened(cls, block: object) -> _Block:
        if not _is_text(block):
            return cls(is_text=False, text=[""])
        return cls(text=[block.text or ""], citations=list(block.citations or []))


@dataclass
class _StreamState:
    """What a streamed answer has said so far: its content blocks by index, the model, stop
    reason and token counts, and whether any text went out to `on_delta` yet."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    meta: dict[str, Any] = field(
        default_factory=lambda: {"model": "", "stop_reason": "", "input": 0, "output": 0}
    )
    emitted: bool = False

    async def take(self, event: RawMessageStreamEvent, on_delta: OnDelta) -> None:
        # Matched on `type` as well as the class: the SDK builds an event of a type it does
        # not know as the union's first member.
        match event:
            case RawMessageStartEvent(type="message_start"):
                message = event.message if isinstance(event.message, Message) else None
                self.meta["model"] = (message.model if message is not None else "") or ""
                usage = message.usage if message is not None else None
                self.meta["input"] = _usage_counts(usage)[0]
            case RawContentBlockStartEvent(type="content_block_start"):
                self.blocks[event.index] = _Block.opened(event.content_block)
            case RawContentBlockDeltaEvent(type="content_block_delta"):
                await self._delta(event, on_delta)
            case RawMessageDeltaEvent(type="message_delta"):
                delta = event.delta
                stop_reason = delta.stop_reason if isinstance(delta, Delta) else None
                self.meta["stop_reason"] = stop_reason or ""
                usage_delta = event.usage
                self.meta["output"] = (
                    int(usage_delta.output_tokens or 0)
                    if isinstance(usage_delta, MessageDeltaUsage)
                    else 0
                )

    async def _delta(self, event: RawContentBlockDeltaEvent, on_delta: OnDelta) -> None:
        delta = event.delta
        slot = self.blocks.setdefault(event.index, _Block())
        if delta.type == "text_delta":
            slot.text.append(delta.text)
            if slot.is_text and delta.text:
                self.emitted = True
                await on_delta(delta.text)
        elif delta.type == "citations_delta":
            slot.citations.append(delta.citation)
