"""Language-model adapters behind `retrieval.ports.LLM`, and the one factory that picks one.

`build_llm` is called once by the composition root; the model it returns is shared by every
service, so its semaphore is the process-wide cap on concurrent model calls. No key and no
base URL → `None`: the services answer in their offline (extractive) mode.
"""

from __future__ import annotations

import asyncio
from typing import Any

from retrieval.llm.base import RetryingLLM
from retrieval.ports import LLM


def build_llm(
    provider: str,
    model: str = "",
    api_key: str | None = None,
    base_url: str | None = None,
    timeout_s: float = 60.0,
    max_retries: int = 3,
    max_concurrency: int = 4,
    context_tokens: int = 0,
) -> LLM | None:
    """`provider`: "anthropic" | "openai" | "none" (settings resolve "auto" before this).

    `model` "" → the provider's current default; `context_tokens` 0 → the model's known window.
    """
    provider = (provider or "none").lower()
    if provider == "none":
        return None
    adapter = _adapter(provider, api_key, base_url)
    return adapter(
        api_key,
        model,
        base_url=base_url,
        timeout_s=timeout_s,
        max_retries=max_retries,
        semaphore=asyncio.Semaphore(max(1, max_concurrency)),
        context_tokens=context_tokens,
    )


def _adapter(provider: str, api_key: str | None, base_url: str | None) -> type[RetryingLLM[Any]]:
    """The provider's adapter class, imported only when chosen (each pulls in its SDK)."""
    if provider == "anthropic":
        if not api_key:
            raise ValueError("the anthropic provider needs an API key (ANTHROPIC_API_KEY)")
        from retrieval.llm.anthropic import ClaudeLLM

        return ClaudeLLM
    if provider == "openai":
        if not api_key and not base_url:
            raise ValueError("the openai provider needs OPENAI_API_KEY or LLM_BASE_URL")
        from retrieval.llm.openai import OpenAICompatLLM

        return OpenAICompatLLM
    raise ValueError(f"unknown LLM provider: {provider!r} (anthropic | openai | none)")


__all__ = ["build_llm"]
