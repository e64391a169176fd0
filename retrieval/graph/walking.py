"""The walk: from the question's entities to scored chunks and the paths that explain them."""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx

from retrieval.graph.contributions import Contributions

DECAY = 0.5  # score factor per hop
HUB_DEGREE = 60  # do not walk through nodes with more neighbours than this (unless entered)
KIND_WEIGHT = {"concept": 1.0, "topic": 0.8, "scripture": 1.0, "book": 0.5, "person": 0.3}


@dataclass(slots=True)
class GraphWalk:
    """What a walk found: chunk scores for fusion, node scores, and label paths to explain it."""

    chunk_scores: dict[str, float] = field(default_factory=dict)
    paths: list[list[str]] = field(default_factory=list)
    nodes: dict[str, float] = field(default_factory=dict)  # node id → score, best first


class Walker:
    def __init__(self, contributions: Contributions) -> None:
        self._c = contributions

    def label(self, node_id: str) -> str:
        return str(self._c.graph.nodes[node_id]["label"])

    def walk(self, entry: Sequence[str], depth: int = 2, *, limit: int = 200) -> GraphWalk:
        """Score nodes within `depth` hops of the entry nodes (any edge direction): DECAY per
        hop, summed over entries, so a node near two entries outranks one near a single entry,
        and nodes on a path between two entries get a bonus. A chunk scores its mentioned nodes'
        scores (weighted by kind, damped for nodes many chunks mention) with diminishing
        returns, boosted by the share of entry nodes it names (see `_chunk_scores`); the best
        `limit` chunks are returned. Walks do not pass through hubs (HUB_DEGREE)."""
        entries = [e for e in dict.fromkeys(entry) if e in self._c.graph]
        result = GraphWalk()
        if not entries:
            return result
        und = self._c.undirected
        dist: dict[str, dict[str, int]] = {e: _bfs(und, e, depth) for e in entries}
        scores: dict[str, float] = {}
        for d in dist.values():
            for node, hops in d.items():
                scores[node] = scores.get(node, 0.0) + DECAY**hops
        between = _paths_between(und, entries, dist)
        for path in between:  # nodes that connect two entries
            for node in path[1:-1]:
                scores[node] = scores.get(node, 0.0) + 0.5
        paths = between or self._paths_around(und, entries[0], dist[entries[0]], depth)
        result.nodes = dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])))

        chunk_scores = self._chunk_scores(scores, entries)
        # Top `limit` by a heap: a common word can attach tens of thousands of chunks, and a
        # full sort of those dominated the slowest walks.
        best = heapq.nsmallest(limit, chunk_scores.items(), key=lambda kv: (-kv[1], kv[0]))
        result.chunk_scores = dict(best)
        result.paths = [[self.label(n) for n in path] for path in paths]
        return result

    def _chunk_scores(self, scores: dict[str, float], entries: list[str]) -> dict[str, float]:
        """Each walked node passes its score (× kind weight × hub damping) to the chunks that
        mention it. A chunk does not add up everything it mentions — that let long outlines,
        summaries and reading lists, which mention many nearby nodes once each, outrank the
        passage about the entity itself. Instead its gains count best first with diminishing
        returns (the k-th best is multiplied by DECAY**k, as a hop is), so a chunk scores at
        most twice its best link; and it is multiplied by (1 + the share of entry nodes it
        mentions itself), so the chunk naming what the question names comes first."""
        gains: dict[str, list[float]] = {}
        g = self._c.graph
        for node, score in scores.items():
            chunks = self._c.mentions.get(node)
            if not chunks:
                continue
            weight = KIND_WEIGHT.get(str(g.nodes[node]["kind"]), 0.5)
            damp = 1.0 / (1.0 + math.log1p(len(chunks)) / 4)  # hubs: many chunks mention it
            gain = score * weight * damp
            for chunk in chunks:
                gains.setdefault(chunk, []).append(gain)
        wanted = set(entries)
        out: dict[str, float] = {}
        for chunk, values in gains.items():
            values.sort(reverse=True)
            total = sum(v * DECAY**i for i, v in enumerate(values))
            named = len(wanted.intersection(self._c.chunk_nodes.get(chunk, ())))
            out[chunk] = total * (1.0 + named / len(wanted))
        return out

    def _paths_around(
        self, und: nx.MultiGraph, entry: str, dist: dict[str, int], depth: int
    ) -> list[list[str]]:
        """With nothing to connect: paths from the entry to its best-attested far neighbours."""
        reach = min(depth, max(dist.values()))
        if reach == 0:
            return []
        g = self._c.graph
        far = [n for n, h in dist.items() if h == reach and g.nodes[n]["kind"] != "scripture"]
        far.sort(key=lambda n: (-len(self._c.mentions.get(n, {})), -und.degree(n), n))
        return [_trace(und, entry, n, dist) for n in far[:3]]


def _bfs(und: nx.MultiGraph, start: str, depth: int) -> dict[str, int]:
    seen = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        hops = seen[node]
        if hops >= depth or (hops > 0 and und.degree(node) > HUB_DEGREE):
            continue
        for nxt in und.neighbors(node):
            if nxt not in seen:
                seen[nxt] = hops + 1
                queue.append(nxt)
    return seen


def _paths_between(
    und: nx.MultiGraph, entries: list[str], dist: dict[str, dict[str, int]]
) -> list[list[str]]:
    """A shortest path for each pair of entries that meet within the walked depth."""
    paths: list[list[str]] = []
    for i, a in enumerate(entries):
        for b in entries[i + 1 :]:
            meet = [n for n in dist[a] if n in dist[b]]
            if not meet:
                continue
            mid = min(meet, key=lambda n: (dist[a][n] + dist[b][n], n))
            left = _trace(und, a, mid, dist[a])
            right = _trace(und, b, mid, dist[b])
            paths.append(left + right[::-1][1:])
    paths.sort(key=len)
    return paths[:5]


def _trace(und: nx.MultiGraph, start: str, goal: str, dist: dict[str, int]) -> list[str]:
    """A shortest path start → goal inside a BFS distance map (deterministic)."""
    path = [goal]
    node = goal
    while node != start:
        hops = dist[node]
        node = min(n for n in und.neighbors(node) if dist.get(n) == hops - 1)
        path.append(node)
    return path[::-1]
