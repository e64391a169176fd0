"""The graph's vocabulary: node and edge records, kinds, relations, scripture node ids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from retrieval import scripture

SEED_DOC = "seed"

KINDS = frozenset({"concept", "person", "scripture", "book", "topic"})


@dataclass(frozen=True, slots=True)
class Relation:
    """A relation type: its English name, and how much of a node's score a walk carries
    along an edge of this type (`forward`, src → dst) or against it (`backward`)."""

    name: str
    en: str
    forward: float
    backward: float
    symmetric: bool = False


# Direction matters for 包含 (a whole leads to its parts far more than a part to its whole,
# which would flood every sibling) and for 发展自 / 发展 (a concept's origin explains it better
# than its offshoots). 相关 is grown from co-occurrence; its edges carry their own weight too.
RELATION_INFO: dict[str, Relation] = {
    r.name: r
    for r in (
        Relation("发展自", "develops from", 0.9, 0.7),
        Relation("发展", "develops", 0.9, 0.7),
        Relation("包含", "includes", 0.9, 0.5),
        Relation("根基于", "is based on", 0.8, 0.8),
        Relation("阐明", "expounds", 0.6, 0.7),
        Relation("对应", "corresponds to", 0.8, 0.8, symmetric=True),
        Relation("著作", "wrote", 0.4, 0.4),  # person wrote book: the indexer adds it
        Relation("相关", "is related to", 0.6, 0.6, symmetric=True),
    )
}
RELATIONS = frozenset(RELATION_INFO)


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
    weight: float = 1.0  # grown edges (相关) carry their strength; curated ones are 1


@dataclass(frozen=True, slots=True)
class DocumentRows:
    """What one document contributes to the graph: its nodes, edges and chunk→node mentions,
    the title its sources are shown by, and its term counts. A document with no rows is
    `DocumentRows(doc)`."""

    doc: str
    nodes: Sequence[Node] = ()
    edges: Sequence[Edge] = ()
    mentions: Sequence[tuple[str, str]] = ()
    title: str = ""
    terms: Mapping[str, int] | None = None


class NodeLike(Protocol):
    """Anything with a node's id, kind and label (`KnowledgeGraph.add` takes it as a `Node`
    with no aliases; a `Node` keeps its own)."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def label(self) -> str: ...


class EdgeLike(Protocol):
    """Anything with an edge's ends and relation (taken as an `Edge` of weight 1; an `Edge`
    keeps its own weight)."""

    @property
    def src(self) -> str: ...
    @property
    def dst(self) -> str: ...
    @property
    def relation(self) -> str: ...


def scripture_node_id(osis: str) -> str:
    return f"scripture:{osis}"


def book_node_id(source: str) -> str:
    return f"book:{source}"


def person_node_id(name: str) -> str:
    return f"person:{name}"


def scripture_label(osis: str, lang: str = "zh") -> str:
    """ "Eph.1.10" → "弗1:10" ("Eph 1:10" in English); an unknown id stays as it is."""
    parts = osis.split(".")
    try:
        b = scripture.book(parts[0])
    except scripture.ScriptureError:
        return osis
    if lang == "en":
        return f"{b.en_short} " + ":".join(parts[1:])
    return b.zh_short + ":".join(parts[1:])


def as_node(n: NodeLike) -> Node:
    aliases = tuple(n.aliases) if isinstance(n, Node) else ()
    return Node(n.id, n.kind, n.label, aliases)


def as_edge(e: EdgeLike) -> Edge:
    weight = float(e.weight) if isinstance(e, Edge) else 1.0
    return Edge(e.src, e.dst, e.relation, weight)
