"""The graph's vocabulary: node and edge records, kinds, relations, scripture node ids."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from retrieval import scripture

SEED_DOC = "seed"

KINDS = frozenset({"concept", "person", "scripture", "book", "topic"})
# 著作 (person wrote book) is what the indexer adds for authors.
RELATIONS = frozenset({"发展自", "根基于", "阐明", "发展", "对应", "包含", "著作"})


@dataclass(frozen=True, slots=True)
class Node:
    id: str  # "concept:神圣分赐", "scripture:Eph.1.10", "book:神的经纶", "person:李常受", "topic:救恩"
    kind: str
    label: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    relation: str


class NodeLike(Protocol):
    """Anything with a node's fields (the indexer has its own small dataclass)."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def label(self) -> str: ...


class EdgeLike(Protocol):
    @property
    def src(self) -> str: ...
    @property
    def dst(self) -> str: ...
    @property
    def relation(self) -> str: ...


def scripture_node_id(osis: str) -> str:
    return f"scripture:{osis}"


def scripture_label(osis: str) -> str:
    """ "Eph.1.10" → "弗1:10"; an id the parser does not know stays as it is."""
    parts = osis.split(".")
    try:
        b = scripture.book(parts[0])
    except scripture.ScriptureError:
        return osis
    return b.zh_short + ":".join(parts[1:])
