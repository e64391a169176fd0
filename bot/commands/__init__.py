"""Every chat command, by room, assembled into one registry (`standard_registry`)."""

from __future__ import annotations

from typing import Literal

from bot.commands.graph import GraphView, graph_commands
from bot.commands.help import help_command
from bot.commands.novel import novel_commands, vote_action
from bot.commands.scholar import Scholar, scholar_commands
from bot.registry import Registry
from novel.api import Novels


def standard_registry(
    scholar: Scholar,
    novels: Novels,
    *,
    openers: Literal["admins", "members"] = "admins",
    graph: GraphView | None = None,
) -> Registry:
    registry = Registry()
    registry.add(*scholar_commands(scholar), *novel_commands(novels, openers=openers))
    if graph is not None:
        registry.add(*graph_commands(graph))
    registry.add(help_command(registry))
    registry.add_action(vote_action(novels))
    return registry
