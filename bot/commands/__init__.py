"""Every chat command, by room, assembled into one registry (`standard_registry`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.commands.help import help_command, start_command
from bot.commands.scholar import ScholarReplies, scholar_actions, scholar_commands
from bot.registry import MAX_UPLOAD_BYTES, Registry
from bot.shelves import Shelves

if TYPE_CHECKING:
    from bot.ballot.room import BallotReplies
    from bot.commands.corpus import Changes, Corpus, Limits
    from bot.commands.graph import GraphView
    from bot.commands.novel import NovelRunner
    from bot.commands.settings import LanguageSetting, Usage
    from bot.presenters.novel import StoryPlaces
    from novel.api import Story


def standard_registry(
    scholar: ScholarReplies,
    novels: NovelRunner,
    ballots: BallotReplies,
    *,
    registry: Registry | None = None,
    chats: LanguageSetting | None = None,
    corpus: Corpus | None = None,
    graph: GraphView | None = None,
    story: Story | None = None,
    places: StoryPlaces | None = None,
    upload_max_bytes: int = MAX_UPLOAD_BYTES,
    shelves: Shelves | None = None,
    changes: Changes | None = None,
    limits: Limits | None = None,
    usage: Usage | None = None,
) -> Registry:
    """The commands of the rooms this process serves (added to `registry` when given: the
    composition root builds its router first); `/settings`, `/ingest`, `/graph` and
    `/novel characters|recap|map` only when their services are given (the story reader with
    the directory of stories, `places`) (the one-shot CLI and some tests run without them).
    `shelves`: what each chat reads of the library (without it, the shared library alone);
    `changes`: the change log (`/sources log`, the daily upload limit); `limits`: TRASH_DAYS
    and UPLOADS_PER_CHAT_PER_DAY; `usage`: today's model tokens (`/settings`; None: no model)."""
    # The other rooms are imported here, not with this package: `baibao cite` (the scholar's
    # registry alone) starts without reading the writers' room, ingestion or the graph views.
    from bot.commands.ballot import ballot_setting, register_ballots
    from bot.commands.corpus import corpus_commands
    from bot.commands.graph import graph_commands
    from bot.commands.novel import novel_commands
    from bot.commands.settings import settings_commands

    registry = registry if registry is not None else Registry()
    registry.add(
        *scholar_commands(scholar, chats, shelves),
        *novel_commands(novels, story=story, places=places),
    )
    if graph is not None:
        registry.add(*graph_commands(graph, shelves))
    if corpus is not None:
        registry.add(
            *corpus_commands(
                corpus,
                max_bytes=upload_max_bytes,
                shelves=shelves,
                changes=changes,
                limits=limits,
            )
        )
    registry.add(*settings_commands(chats, extra=(ballot_setting(ballots),), usage=usage))
    registry.add(start_command(registry), help_command(registry))
    registry.add_action(*scholar_actions(scholar))
    return register_ballots(registry, ballots)


def scholar_registry(
    scholar: ScholarReplies,
    *,
    chats: LanguageSetting | None = None,
    registry: Registry | None = None,
) -> Registry:
    """The scholar's commands alone: what the one-shot CLI (`baibao ask`, `baibao cite`)
    routes, with no writers' room open."""
    registry = registry if registry is not None else Registry()
    registry.add(*scholar_commands(scholar, chats))
    registry.add(start_command(registry), help_command(registry))
    registry.add_action(*scholar_actions(scholar))
    return registry
