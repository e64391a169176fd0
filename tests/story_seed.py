"""Three chapters of the default blueprint's world (青岚渡), written for the `/novel
characters|recap|map` tests: a wound, a death, a newcomer, a missing man found again. Saved
through the real `PlotMemory` (SQLite + the vector store) with their extractive summaries, as
`/chapter submit` saves them without a model."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from novel.blueprint import default_blueprint
from novel.memory import PlotMemory
from novel.repo import Draft, NovelRepo
from novel.summary import summarise

CHAPTERS = (
    (
        "夜渡",
        "夜色沉沉，林远提着灯走到青岚渡口。苏晴在船头举着灯笼。\n\n"
        "一个名叫钱七的老船夫摇着橹过来。林远和钱七一起撑船过江。",
    ),
    (
        "江心",
        "林远和苏晴到了江心岛。霍三的人追上来，一刀砍在林远的左臂上。\n\n"
        "苏晴替林远包扎伤口。钱七守在船上。",
    ),
    (
        "听潮",
        "钱七死了。林远在听潮阁里见到了沈默。\n\n沈默站在听潮阁门口，望着江面。苏晴也在听潮阁。",
    ),
)
WHEN = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


async def seed(
    repo: NovelRepo, memory: PlotMemory, chat_id: str, count: int = len(CHAPTERS)
) -> None:
    bp = default_blueprint()
    await repo.world.ensure_novel(chat_id, bp.to_json(), WHEN)
    for title, text in CHAPTERS[:count]:
        summary = await summarise(None, text, title, bp, [])
        await memory.add_chapter(
            chat_id=chat_id,
            chapter_id=uuid.uuid4().hex,
            draft=Draft(
                title=title,
                text=text,
                summary=summary,
                author="测试",
                reason="submitted",
                now=WHEN,
            ),
        )
