"""The curated seed file: validation with messages that name the file and the entry."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrieval import scripture
from retrieval.graph.model import KINDS, RELATIONS, Edge, Node, scripture_label, scripture_node_id

DEFAULT_SEED = Path(__file__).parent.parent / "data" / "seed_graph.json"


class GraphSeedError(ValueError):
    """The seed file cannot be used; the message says which file and what is wrong."""


def load_seed(path: Path) -> tuple[list[Node], list[Edge]]:
    """Read a curated seed file; GraphSeedError says what is wrong and where.

    Format: {"nodes": [{"kind", "label", "aliases"?, "id"?}], "edges": [[src, relation, dst]]}.
    Edge ends are node labels or ids, or scripture references ("弗1:10", "林后13:14", "弗3:16-17"),
    which become scripture nodes (one per verse; a chapter reference is one chapter node)."""
    raw = _read_seed(path)

    def fail(where: str, what: str) -> GraphSeedError:
        return GraphSeedError(f"seed graph {path}: {where}: {what}")

    nodes: dict[str, Node] = {}
    by_name: dict[str, str] = {}
    for i, item in enumerate(raw["nodes"]):
        where = f"nodes[{i}]"
        node = _seed_node(item, functools.partial(fail, where))
        if node.id in nodes:
            raise fail(where, f"duplicate node {node.id}")
        nodes[node.id] = node
        for name in (node.id, node.label):
            if by_name.setdefault(name, node.id) != node.id:
                raise fail(where, f"label {name!r} is used by two nodes")
    edges: list[Edge] = []
    for i, item in enumerate(raw.get("edges", [])):
        where_fails = functools.partial(fail, f"edges[{i}]")
        src, relation, dst = _seed_edge(item, where_fails)
        ends = [_seed_end(name, by_name, nodes, where_fails) for name in (src, dst)]
        edges.extend(Edge(a, b, relation) for a in ends[0] for b in ends[1])
    return list(nodes.values()), edges


def _read_seed(path: Path) -> dict[str, Any]:
    """The file as JSON with a "nodes" list (and an "edges" list, if any)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise GraphSeedError(f"seed graph {path}: cannot read it ({err.strerror})") from None
    except json.JSONDecodeError as err:
        raise GraphSeedError(
            f"seed graph {path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}"
        ) from None
    except UnicodeDecodeError:
        raise GraphSeedError(f"seed graph {path}: not UTF-8 text") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("nodes"), list):
        raise GraphSeedError(f'seed graph {path}: expected an object with a "nodes" list')
    if not isinstance(raw.get("edges", []), list):
        raise GraphSeedError(f'seed graph {path}: "edges" must be a list')
    return raw


def _seed_node(item: object, fail: Callable[[str], GraphSeedError]) -> Node:
    """One entry of "nodes", checked field by field."""
    if not isinstance(item, dict):
        raise fail("expected an object")
    kind, label = item.get("kind"), item.get("label")
    if kind not in KINDS or kind == "scripture":
        raise fail(f"kind must be one of concept, person, book, topic (got {kind!r})")
    if not isinstance(label, str) or not label.strip():
        raise fail("label must be a non-empty string")
    aliases = item.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise fail("aliases must be a list of strings")
    node_id = item.get("id") or f"{kind}:{label.strip()}"
    if not isinstance(node_id, str) or ":" not in node_id:
        raise fail(f"id must look like kind:name (got {node_id!r})")
    return Node(node_id, kind, label.strip(), tuple(a.strip() for a in aliases))


def _seed_edge(item: object, fail: Callable[[str], GraphSeedError]) -> tuple[str, str, str]:
    """One entry of "edges": [source, relation, target] with a known relation."""
    if not (isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item)):
        raise fail("expected [source, relation, target]")
    src, relation, dst = item
    if relation not in RELATIONS:
        raise fail(f"unknown relation {relation!r} (use one of {', '.join(sorted(RELATIONS))})")
    return src, relation, dst


def _seed_end(
    name: str,
    by_name: dict[str, str],
    nodes: dict[str, Node],
    fail: Callable[[str], GraphSeedError],
) -> list[str]:
    if name in by_name:
        return [by_name[name]]
    try:
        ranges = scripture.parse_reference(name)
    except scripture.ScriptureError as err:
        raise fail(
            f"{name!r} is neither a node in this file nor a scripture reference ({err})"
        ) from None
    ids: list[str] = []
    for r in ranges:
        if r.start.verse is None:
            osis_ids = [f"{r.start.book}.{c}" for c in range(r.start.chapter, r.end.chapter + 1)]
        else:
            osis_ids = scripture.expand(r)
        for osis in osis_ids:
            node_id = scripture_node_id(osis)
            if node_id not in nodes:
                nodes[node_id] = Node(node_id, "scripture", scripture_label(osis))
            ids.append(node_id)
    return ids
