"""The /ask and /cite service (placeholder until the answer pipeline lands)."""

from __future__ import annotations

from retrieval.reply import Progress, Reply
from retrieval.requests import Actor, AskRequest, CiteRequest


class Scholar:
    async def ask(
        self, actor: Actor, request: AskRequest, progress: Progress | None = None
    ) -> Reply:
        return Reply.text(
            "语料尚未就绪。" if actor.lang == "zh" else "The corpus is not ready yet."
        )

    async def cite(self, actor: Actor, request: CiteRequest) -> Reply:
        refs = ", ".join(a if a == b else f"{a}-{b}" for a, b in request.refs)
        return Reply.text(refs)
