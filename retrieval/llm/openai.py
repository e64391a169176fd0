"""OpenAICompatLLM: Chat Completions through the official `openai` SDK.

Works with OpenAI itself and with any server speaking the same API (Ollama, vLLM, llama.cpp,
DeepSeek …) by `base_url`. There are no native citations: the passages are numbered inside
clear delimiters in the user message and the model is told to mark each claim with `[n]`;
those markers stay in the text for `retrieval.answer` to verify.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import openai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice
from openai.types.chat.chat_completion_chunk import ChoiceDelta

from retrieval.llm.base import (
    RetryingLLM,
    SdkErrors,
)
from retrieval.ports import LLMError, LLMRequest, LLMResponse, OnDelta, SourceDocument, TextSegment

# OpenAI's efficient current model (checked against the OpenAI model pages, November 2026).
DEFAULT_MODEL = "gpt-6-luna"

# Reasoning models (o-series, GPT-5 and later) take `max_completion_tokens` and reject a
# non-default temperature; older models and most compatible servers take both classic fields.
_REASONING = re.compile(r"^(o\d|gpt-(5|6|7))")

_WINDOWS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"^gpt-(6|5\.[5-9])"), 1_050_000),
    (re.compile(r"^gpt-4\.1"), 1_047_576),
    (re.compile(r"^gpt-5"), 400_000),
    (re.compile(r"^(o\d)"), 200_000),
    (re.compile(r"^gpt-4o"), 128_000),
)
# An unknown model on a self-hosted server: assume a small window (Ollama's default is small).
UNKNOWN_WINDOW = 8_192

CITE_INSTRUCTION_ZH = (
    '资料以 <document index="n"> 标签给出并编号。每一句依据资料的陈述，请在句末标注所依据资料的编号，'
    "例如 [2]；引用原文时把原文放在「」中并标注编号。不要标注不存在的编号。"
)


def context_window(model: str) -> int:
    for pattern, window in _WINDOWS:
        if pattern.match(model):
            return window
    return UNKNOWN_WINDOW


def render_documents(documents: Sequence[SourceDocument]) -> str:
    """Passages as numbered, delimited data; a delimiter inside a passage is defused."""
    parts = []
    for doc in documents:
        text = _defuse(doc.text)
        title = _defuse(doc.title).replace('"', "'")
        parts.append(f'<document index="{doc.index}">\n[{doc.index}] {title}\n{text}\n</document>')
    return "\n\n".join(parts)


def _defuse(text: str) -> str:
    return re.sub(r"<\s*(/?)\s*document", r"＜\1document", text, flags=re.IGNORECASE)


class OpenAICompatLLM(RetryingLLM[openai.AsyncOpenAI]):
    """`retrieval.ports.LLM` over Chat Completions (OpenAI or a compatible server)."""

    native_citations = False
    name = "openai"
    default_model = DEFAULT_MODEL
    errors = SdkErrors.of(openai, in_stream=(openai.APIError,))
    _official: bool

    def _open(
        self, api_key: str | None, base_url: str | None, timeout_s: float
    ) -> openai.AsyncOpenAI:
        # OpenAI itself takes the reasoning models' parameters; compatible servers do not.
        self._official = base_url is None or "api.openai.com" in base_url
        # Self-hosted servers often need no key, but the SDK insists on one.
        return openai.AsyncOpenAI(
            api_key=api_key or "not-needed", base_url=base_url, max_retries=0, timeout=timeout_s
        )

    def _context_window(self, model: str) -> int:
        return context_window(model)

    async def _attempt(self, request: LLMRequest, on_delta: OnDelta | None) -> LLMResponse:
        params = self._params(request)
        if on_delta is None:
            return await self._once(params)
        return await self._streamed(params, on_delta)

    # ---- request ------------------------------------------------------------------------

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        system = request.system
        messages: list[dict[str, Any]] = [
            {"role": m.role, "content": m.content} for m in request.messages
        ]
        if request.documents:
            system = f"{system}\n\n{CITE_INSTRUCTION_ZH}" if system else CITE_INSTRUCTION_ZH
            if not messages or messages[-1]["role"] != "user":
                messages.append({"role": "user", "content": ""})
            question = messages[-1]["content"]
            messages[-1] = {
                "role": "user",
                "content": f"{render_documents(request.documents)}\n\n{question}".rstrip(),
            }
        if system:
            messages.insert(0, {"role": "system", "content": system})
        params: dict[str, Any] = {"model": self.model, "messages": messages}
        if self._official and _REASONING.match(self.model):
            params["max_completion_tokens"] = request.max_tokens
        else:
            params["max_tokens"] = request.max_tokens
            params["temperature"] = request.temperature
        return params

    # ---- one attempt --------------------------------------------------------------------

    async def _once(self, params: dict[str, Any]) -> LLMResponse:
        with self._sdk_errors():
            completion = await self._client.chat.completions.create(**params)
        if isinstance(completion, str | bytes):
            raise LLMError("malformed", "response is not a JSON completion")
        # The SDK builds its models without validation: a field the body lacks is None, and
        # one of the wrong shape is left as it came, so every level is checked by its class.
        if not isinstance(completion, ChatCompletion):
            raise LLMError("malformed", "completion without choices")
        choices = completion.choices
        if not isinstance(choices, list) or not choices:
            raise LLMError("malformed", "completion without choices")
        choice = choices[0]
        text = _message_text(choice.message) if isinstance(choice, Choice) else None
        if not isinstance(text, str):
            raise LLMError("malformed", "choice without text content")
        input_tokens, output_tokens = _token_counts(completion.usage)
        return LLMResponse(
            segments=(TextSegment(text),),
            model=str(completion.model or self.model),
            stop_reason=str(choice.finish_reason or ""),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )

    async def _streamed(self, params: dict[str, Any], on_delta: OnDelta) -> LLMResponse:
        pieces: list[str] = []
        meta: dict[str, Any] = {"model": "", "stop": "", "input": 0, "output": 0}
        emitted = False
        extra: dict[str, Any] = (
            {"stream_options": {"include_usage": True}} if self._official else {}
        )
        with self._sdk_errors(lambda: emitted):
            stream = await self._client.chat.completions.create(**params, stream=True, **extra)
            async for chunk in stream:
                if not isinstance(chunk, ChatCompletionChunk):
                    continue  # a bare JSON value, not an object: nothing to read
                meta["model"] = meta["model"] or chunk.model or ""
                if chunk.usage is not None:
                    meta["input"], meta["output"] = _token_counts(chunk.usage)
                for choice in chunk.choices or []:
                    if not isinstance(choice, ChunkChoice) or choice.index != 0:
                        continue
                    if choice.finish_reason:
                        meta["stop"] = choice.finish_reason
                    delta = choice.delta
                    text = delta.content if isinstance(delta, ChoiceDelta) else None
                    if isinstance(text, str) and text:
                        pieces.append(text)
                        emitted = True
                        await on_delta(text)
        if not pieces and not meta["stop"]:
            raise LLMError("malformed", "stream ended without content")
        return LLMResponse(
            segments=(TextSegment("".join(pieces)),),
            model=meta["model"] or self.model,
            stop_reason=meta["stop"],
            input_tokens=meta["input"],
            output_tokens=meta["output"],
        )


def _message_text(message: ChatCompletionMessage | None) -> str | None:
    """The answer's text, or the refusal the model gave instead of one."""
    if not isinstance(message, ChatCompletionMessage):
        return None
    return message.content if message.content is not None else message.refusal


def _token_counts(usage: CompletionUsage | None) -> tuple[int, int]:
    """(prompt, completion) tokens; 0 for whatever the server did not count."""
    if not isinstance(usage, CompletionUsage):
        return 0, 0
    return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
