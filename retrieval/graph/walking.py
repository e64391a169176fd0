"""The walk: from the question's entities to scored chunks and the paths that explain them.

From each entry node (weighted down when a large share of the corpus mentions it) the walk
reaches nodes up to `depth` hops away along typed edges: a hop
carries DECAY × the relation's weight in the direction travelled (`model.RELATION_INFO`: a
whole leads to its parts more than a part to its whole) × the edge's own weight (grown
co-occurrence edges), and a node keeps the best score any route gives it. Scores add up over
the entries, so a node near two entries outranks a node near one, and nodes on the best path
between two entries (meeting in the middle, up to `depth` hops from each) get a bonus. The
walk does not pass through hubs (HUB_DEGREE edges) it did not start from, nor through an
author (a person who 著作 a book): 「枝子 ←发展— 示例作者 —发展→ 三一神」 says who wrote
about both, not how they relate, so an author is reached, never walked through, never the
middle of a path and never the far end of one (unless the question names him). A book (a
document of the corpus) is walked through, but no path shown passes through one or ends at one
it walked to: it says where two concepts are discussed, not how they relate.

Chunks then score what they mention (see `Walker._chunk_scores`), and the paths come back as
`GraphPath`s with relation names, directions, English labels and each edge's sources.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np
import numpy.typing as npt

from retrieval.gloss import english_label
from retrieval.graph.model import RELATION_INFO, SEED_DOC, scripture_label
from retrieval.graph.storage import Adjacency, GraphReads
from retrieval.types import GraphPath, PathStep

DECAY = 0.5  # score factor per hop along the strongest relation
HUB_DEGREE = 60  # do not walk through nodes with more edges than this (unless entered)
MANY_CHUNKS = 300  # nodes mentioned by more chunks than this are scored lazily (see below)
BETWEEN_BONUS = 0.5
# An entry mentioned by more than this share of all chunks counts less (measured on the
# labelled set: graph recall@5 0.619 → 0.669 with the grown graph).
COMMON_SHARE = 0.05
AUTHORSHIP = "著作"  # person → book: the person is an author
KIND_WEIGHT = {"concept": 1.0, "topic": 0.8, "scripture": 1.0, "book": 0.5, "person": 0.3}


@dataclass(slots=True)
class GraphWalk:
    """What a walk found: chunk scores for fusion, node scores, the paths that explain them,
    and the entry nodes the graph knows (empty: the question named nothing in the graph)."""

    chunk_scores: dict[str, float] = field(default_factory=dict)
    paths: list[GraphPath] = field(default_factory=list)
    nodes: dict[str, float] = field(default_factory=dict)  # node id → score, best first
    entries: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Reach:
    """One route from an entry: its score and length, the node it ends at, and its last hop
    (the route to the previous node, the relation, whether the edge points along the route)."""

    score: float
    hops: int
    node: str
    via: _Reach | None = None
    relation: str = ""
    forward: bool = True


class Walker:
    def __init__(self, reads: GraphReads) -> None:
        self._r = reads

    def walk(self, entry: Sequence[str], depth: int = 2, *, limit: int = 200) -> GraphWalk:
        g = self._r.adjacency
        entries = [e for e in dict.fromkeys(entry) if e in g]
        result = GraphWalk(entries=entries)
        if not entries:
            return result
        reach = {e: self._reach(e, depth, self._entry_weight(e)) for e in entries}
        scores: dict[str, float] = {}
        for by_node in reach.values():
            for node, r in by_node.items():
                scores[node] = scores.get(node, 0.0) + r.score
        between = self._paths_between(entries, reach)
        for nodes, _ in between:
            for node in nodes[1:-1]:
                scores[node] = scores.get(node, 0.0) + BETWEEN_BONUS
        # Shown paths link concepts: none through a book (a path through one says only that
        # it discusses both); the bonus above still counts every path found.
        traced = [p for p in between if self._links(p[0])] or [
            p for p in self._paths_around(entries[0], reach[entries[0]], depth) if self._links(p[0])
        ]
        result.nodes = dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])))
        result.chunk_scores = self._chunk_scores(scores, entries, limit)
        result.paths = [self.path(nodes, steps) for nodes, steps in traced]
        return result

    # ---- reaching -----------------------------------------------------------------------------

    def _entry_weight(self, node: str) -> float:
        """How much a named entity counts: 1, less for one that more than COMMON_SHARE of all
        chunks mention (a word that common says little about what the question wants)."""
        m = self._r.mentions
        share = m.count(node) / max(1, m.chunk_total)
        return 1.0 if share <= COMMON_SHARE else COMMON_SHARE / share

    def _reach(self, start: str, depth: int, weight: float = 1.0) -> dict[str, _Reach]:
        """The best route (of at most `depth` hops) from `start` to every node it reaches.
        Layer by layer, so a route's every prefix is itself a route of that length."""
        g = self._r.adjacency
        layer = {start: _Reach(weight, 0, start)}
        best = dict(layer)
        for hops in range(1, depth + 1):
            following: dict[str, _Reach] = {}
            for node, route in layer.items():
                if hops > 1 and (g.degree(node) > HUB_DEGREE or self._author(node)):
                    continue
                for forward, neighbours in (
                    (True, g.successors(node)),
                    (False, g.predecessors(node)),
                ):
                    for other, edges in neighbours.items():
                        if other == start:
                            continue
                        for relation, weight in edges.items():
                            info = RELATION_INFO[relation]
                            w = info.forward if forward else info.backward
                            score = route.score * DECAY * w * weight
                            known = following.get(other)
                            if known is None or score > known.score:
                                following[other] = _Reach(
                                    score, hops, other, route, relation, forward
                                )
            for node, route in following.items():
                if node not in best or route.score > best[node].score:
                    best[node] = route
            layer = following
        return best

    def _paths_between(
        self, entries: list[str], reach: dict[str, dict[str, _Reach]]
    ) -> list[tuple[list[str], list[tuple[str, bool]]]]:
        """The best path for each pair of entries that meet within the walked depth."""
        found: list[tuple[float, int, list[str], list[tuple[str, bool]]]] = []
        for i, a in enumerate(entries):
            for b in entries[i + 1 :]:
                ra, rb = reach[a], reach[b]
                meet = [n for n in ra if n in rb and (n in (a, b) or not self._author(n))]
                if not meet:
                    continue
                mid = min(
                    meet,
                    key=lambda n: (-ra[n].score * rb[n].score, ra[n].hops + rb[n].hops, n),
                )
                left_nodes, left_steps = _trace(ra, mid)
                right_nodes, right_steps = _trace(rb, mid)
                nodes = left_nodes + right_nodes[::-1][1:]
                steps = left_steps + [(rel, not fwd) for rel, fwd in right_steps[::-1]]
                found.append((-ra[mid].score * rb[mid].score, len(nodes), nodes, steps))
        found.sort(key=lambda f: (f[1], f[0], f[2]))
        return [(nodes, steps) for _, _, nodes, steps in found[:5]]

    def _paths_around(
        self, entry: str, reach: dict[str, _Reach], depth: int
    ) -> list[tuple[list[str], list[tuple[str, bool]]]]:
        """With nothing to connect: paths from the entry to its best-reached far neighbours."""
        far_hops = min(depth, max(r.hops for r in reach.values()))
        if far_hops == 0:
            return []
        g = self._r.adjacency
        far = [
            n
            for n, r in reach.items()
            if r.hops == far_hops
            and _kind(g, n) not in ("scripture", "book")
            and not self._author(n)
        ]
        far.sort(key=lambda n: (-reach[n].score, -self._r.mentions.count(n), n))
        return [_trace(reach, n) for n in far[:3]]

    def _links(self, nodes: Sequence[str]) -> bool:
        """No node inside the path is a book: 「revelation ←expounds— The Overcomers, Zion, and
        the Bride —expounds→ christ」 says where both are discussed, not how they relate."""
        g = self._r.adjacency
        return all(_kind(g, n) != "book" for n in nodes[1:-1])

    def _author(self, node: str) -> bool:
        """A person who wrote a book of the corpus (his 著作 edge): no link between concepts."""
        g = self._r.adjacency
        return _kind(g, node) == "person" and any(
            AUTHORSHIP in by_relation for by_relation in g.successors(node).values()
        )

    # ---- chunks -------------------------------------------------------------------------------

    def _chunk_scores(
        self, scores: dict[str, float], entries: list[str], limit: int
    ) -> dict[str, float]:
        """The best `limit` chunks by what they mention, best first (ties by chunk id).

        Each walked node passes its score (× kind weight × hub damping) to the chunks that
        mention it. A chunk does not add up everything it mentions — that let long outlines,
        summaries and reading lists, which mention many nearby nodes once each, outrank the
        passage about the entity itself. Instead its gains count best first with diminishing
        returns (the k-th best is multiplied by DECAY**k, as a hop is), so a chunk scores at
        most twice its best link; and it is multiplied by (1 + the share of entry nodes it
        mentions itself), so the chunk naming what the question names comes first.

        Nodes go smallest first. A node that more than MANY_CHUNKS chunks mention (灵 in a
        Bible-sized corpus: tens of thousands) gives its gain to the chunks already scored
        that mention it, and to `limit` more of its own (the earliest indexed): all its other
        chunks would score the same, so they could not reach the top `limit` anyway (a chunk
        that two such nodes alone share may be missed: the approximation that bounds the
        walk). The chunks are numpy arrays (`mentions`), so this is a few array operations
        per node; see bench/results/million.md for the timings."""
        m = self._r.mentions
        g = self._r.adjacency
        walked = sorted((size, n) for n in scores if (size := m.count(n)))
        parts: list[npt.NDArray[np.int32]] = []
        gains: list[npt.NDArray[np.float64]] = []
        # The chunks scored so far, by chunk number (for the big nodes): a mask, where a sorted
        # union kept up to date cost 0.5 ms a call at 1M chunks.
        seen = np.zeros(m.chunk_span, dtype=bool)
        for size, node in walked:
            chunks = m.chunk_numbers(node)
            weight = KIND_WEIGHT.get(_kind(g, node), 0.5)
            damp = 1.0 / (1.0 + math.log1p(size) / 4)  # hubs: many chunks mention it
            gain = scores[node] * weight * damp
            if size > MANY_CHUNKS:
                # Of a big node's tens of thousands of chunks only the scored ones and the
                # first `limit` others are wanted: the others come from a head that holds
                # enough of them (`take`, unlike indexing, uses int32 numbers uncast).
                known = seen.take(chunks)
                held = chunks[known]
                head = chunks[: limit + len(held)]
                chunks = np.concatenate([held, head[~known[: len(head)]][:limit]])
            parts.append(chunks)
            gains.append(np.full(len(chunks), gain))
            seen[chunks] = True
        if not parts:
            return {}
        chunk = np.concatenate(parts)
        gained = np.concatenate(gains)
        order = np.lexsort((-gained, chunk))  # by chunk, each chunk's gains best first
        chunk, gained = chunk[order], gained[order]
        first = np.concatenate(([True], chunk[1:] != chunk[:-1]))
        group = np.cumsum(first) - 1
        rank = np.arange(len(chunk)) - np.flatnonzero(first)[group]
        total = np.bincount(group, weights=gained * DECAY**rank)
        unique = chunk[first]
        named = np.zeros(len(unique))
        wanted = list(dict.fromkeys(entries))
        for node in wanted:
            named += _members(unique, m.chunk_numbers(node))
        score = total * (1.0 + named / len(wanted))
        if len(score) > limit:  # the best `limit`, and every chunk tied with the last of them
            cut = np.partition(score, len(score) - limit)[len(score) - limit]
            keep = np.flatnonzero(score >= cut)
            unique, score = unique[keep], score[keep]
        ranked = sorted(
            zip(score.tolist(), m.names(unique), strict=True),
            key=lambda sc: (-sc[0], sc[1]),
        )
        return {name: value for value, name in ranked[:limit]}

    # ---- paths --------------------------------------------------------------------------------

    def path(self, nodes: Sequence[str], steps: Sequence[tuple[str, bool]]) -> GraphPath:
        """A `GraphPath` for nodes joined by (relation, edge points along the path) steps."""
        out_steps = []
        for i, (relation, forward) in enumerate(steps):
            src, dst = (nodes[i], nodes[i + 1]) if forward else (nodes[i + 1], nodes[i])
            sources = self.sources((src, dst, relation))
            info = RELATION_INFO[relation]
            out_steps.append(PathStep(relation, info.en, forward, sources, info.symmetric))
        english = [self._english(n) for n in nodes]
        return GraphPath(
            tuple(nodes),
            tuple(self.label(n) for n in nodes),
            DictionaryLabels(
                tuple(label for label, _ in english),
                frozenset(i for i, (_, look_up) in enumerate(english) if look_up),
            ),
            tuple(out_steps),
        )

    def sources(self, key: tuple[str, str, str]) -> tuple[str, ...]:
        """ "seed" for the curated seed, else the titles of the documents behind an edge."""
        docs = self._r.edge_sources(key)
        return tuple(d if d == SEED_DOC else self._r.titles.get(d, d) for d in docs)

    def label(self, node_id: str, lang: str = "zh") -> str:
        if lang != "en":
            data = self._r.adjacency.node(node_id)
            if data is None:
                raise KeyError(node_id)
            return data.label
        label, look_up = self._english(node_id)
        return (english_label(label) or label) if look_up else label

    def _english(self, node_id: str) -> tuple[str, bool]:
        """A node's English label, or its Chinese one and True when the dictionary names it."""
        data = self._r.adjacency.node(node_id)
        if data is None:
            raise KeyError(node_id)
        if data.kind == "scripture":
            return scripture_label(node_id.partition(":")[2], "en"), False
        alias = next((a for a in data.aliases if a.isascii()), None)
        if alias is not None:
            return alias, False
        # A concept grown from a document often has no English alias: the dictionary's name
        # for it (CC-CEDICT read forwards, indexed once on first use), else its own label.
        return data.label, data.kind == "concept"


class DictionaryLabels(Sequence[str]):
    """A path's English labels, those at `look_up` read from CC-CEDICT (else kept) when the
    labels are first read, not when the path is found: indexing the dictionary takes about
    a second, and most paths are only shown in Chinese (a /cite, a Chinese /ask). Equal to
    the tuple of its labels, and hashed as it."""

    __slots__ = ("_labels", "_look_up", "_read")

    def __init__(self, labels: tuple[str, ...], look_up: frozenset[int]) -> None:
        self._labels = labels
        self._look_up = look_up
        self._read: tuple[str, ...] | None = None if look_up else labels

    def _all(self) -> tuple[str, ...]:
        if self._read is None:
            self._read = tuple(
                (english_label(label) or label) if i in self._look_up else label
                for i, label in enumerate(self._labels)
            )
        return self._read

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._labels)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DictionaryLabels):
            other = other._all()
        return isinstance(other, tuple) and self._all() == other

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


def _kind(g: Adjacency, node_id: str) -> str:
    node = g.node(node_id)
    if node is None:
        raise KeyError(node_id)
    return node.kind


def _trace(reach: dict[str, _Reach], goal: str) -> tuple[list[str], list[tuple[str, bool]]]:
    """The best route from the entry to `goal`: its nodes and (relation, forward) steps."""
    nodes: list[str] = []
    steps: list[tuple[str, bool]] = []
    route: _Reach | None = reach[goal]
    while route is not None:
        nodes.append(route.node)
        if route.via is not None:
            steps.append((route.relation, route.forward))
        route = route.via
    return nodes[::-1], steps[::-1]


def _members(
    items: npt.NDArray[np.int32], sorted_set: npt.NDArray[np.int32]
) -> npt.NDArray[np.bool_]:
    """Which of `items` (sorted, unique) are in `sorted_set` (sorted, unique): the smaller
    array is looked up in the larger (a big node's chunks against a few scored ones)."""
    found = np.zeros(len(items), dtype=bool)
    if not len(items) or not len(sorted_set):
        return found
    if len(sorted_set) < len(items):
        pos = np.searchsorted(items, sorted_set)
        pos[pos == len(items)] = 0
        found[pos[items[pos] == sorted_set]] = True
        return found
    pos = np.searchsorted(sorted_set, items)
    pos[pos == len(sorted_set)] = 0
    return np.asarray(sorted_set[pos] == items)
