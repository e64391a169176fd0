"""The graph's command: `/graph 神圣分赐` answers with a picture of the concept's
neighbourhood and a short list of its relations."""

from __future__ import annotations

from typing import Any, Protocol

from bot.presenters.graph import graph_reply
from bot.registry import Call, Command, Help, Param, UsageError, Values
from bot.reply import Reply
from bot.shelves import Shelves
from kernel.i18n import Lang
from retrieval.graph.view import GraphLookup
from retrieval.library import SHARED_ONLY, Reading

MAX_CONCEPT = 100


class GraphView(Protocol):
    """What `/graph` needs (`retrieval.graph.view.GraphViewer`): the graph a chat sees, which
    hides what only other chats' shelves and the trash grew."""

    async def show(
        self, text: str, lang: Lang, *, reading: Reading = SHARED_ONLY
    ) -> GraphLookup: ...


def _concept(values: Values) -> str:
    text = values.text("concept").strip()
    if not text:
        raise UsageError.say(
            "请写出要查看的概念，例如：/graph 神圣分赐", "Name a concept, e.g. /graph 神圣分赐"
        )
    return text


def graph_commands(view: GraphView, shelves: Shelves | None = None) -> tuple[Command[Any], ...]:
    shelves = shelves or Shelves()

    async def show(call: Call, concept: str) -> Reply:
        lang = call.actor.lang
        reading = shelves.reading(call.actor)
        return graph_reply(await view.show(concept, lang, reading=reading), lang)

    return (
        Command(
            help=Help(
                "graph",
                "查看知识图谱：概念的关系图（图片）与关系列表",
                "See the knowledge graph: a concept's relations as a picture and a list",
                "/graph 神圣分赐",
                "/graph economy",
            ),
            params=(Param("concept", "概念", "concept", rest=True, max_len=MAX_CONCEPT),),
            parse=_concept,
            run=show,
        ),
    )
