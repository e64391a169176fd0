"""Where the graph lives: its rows in SQLite and what is built from them in memory.

- `rows`: `GraphDB`, the SQLite rows, every one tagged with the document that contributed it;
- `adjacency`: the merged graph (nodes, typed directed weighted edges, in a fixed order);
- `mentions`: which chunks mention which nodes, as compact numpy arrays;
- `contributions`: the rows of every document merged into what queries read (`GraphReads`),
  kept in step as documents come and go;
- `snapshot`: `GraphReads` saved to one file, so a large graph opens without its rows.

The algorithms (`linking`, `walking`, `grow`) read through `GraphReads`; everyone else reads
through `GraphQueries` (`KnowledgeGraph.query`), and only `KnowledgeGraph` builds or changes
these structures.
"""

from retrieval.graph.storage.adjacency import Adjacency, Neighbours
from retrieval.graph.storage.contributions import (
    Contributions,
    EdgeKey,
    GraphReads,
    NodeRow,
    graph_stats,
)
from retrieval.graph.storage.mentions import Mentions
from retrieval.graph.storage.rows import GraphDB

__all__ = [
    "Adjacency",
    "Contributions",
    "EdgeKey",
    "GraphDB",
    "GraphReads",
    "Mentions",
    "Neighbours",
    "NodeRow",
    "graph_stats",
]
