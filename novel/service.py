"""The novel service (placeholder until the writers' room lands)."""

from __future__ import annotations

from novel.api import NovelRequest
from retrieval.reply import Progress, Reply
from retrieval.requests import Actor


class NovelService:
    async def handle(
        self, actor: Actor, request: NovelRequest, progress: Progress | None = None
    ) -> Reply:
        return Reply.text(type(request).__name__)
