"""Asking the model for a JSON object and reading what comes back, leniently: code fences,
prose around the object and trailing commas are all common in real answers."""

from __future__ import annotations

import json
import re
from typing import Any

from retrieval.ports import LLM, LLMRequest, Message


async def ask(llm: LLM, system: str, prompt: str, max_tokens: int = 1200) -> str:
    """One deterministic request; raises LLMError like the model does."""
    response = await llm.complete(
        LLMRequest(
            system=system,
            messages=[Message("user", prompt)],
            max_tokens=max_tokens,
            temperature=0.0,
        )
    )
    return response.text


def loose_object(raw: str) -> dict[str, Any] | None:
    """The JSON object in a model's answer, or None."""
    text = re.sub(r"```(?:json)?", "", raw).strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    body = text[start : end + 1]
    for candidate in (body, re.sub(r",\s*([}\]])", r"\1", body)):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        return data if isinstance(data, dict) else None
    return None
