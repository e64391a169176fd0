"""The knowledge graph: concepts, people, scripture, books and topics, with provenance.

Modules, each with one job:
- `model`: node/edge records, kinds, relations, scripture node ids;
- `seed`: the curated seed file and its validation;
- `storage`: SQLite rows tagged with the contributing document, the in-memory graph merged
  from every document's rows, which chunks mention which nodes, and the snapshot;
- `linking`: which nodes a text names;
- `walking`: from entry nodes to scored chunks and explaining paths;
- `view`: /graph's typed result (a node's ranked relations and picture) and path pictures;
- `grow`: what an ingested document adds (new concepts, aliases, relations), offline;
- `queries`: `GraphQueries`, the read API (nodes, relations, names, walks), typed values;
- `core`: `KnowledgeGraph`, the facade that keeps storage and memory in step; its reads are
  `KnowledgeGraph.query`.

Search reads the graph through `retrieval.search.GraphReader` (link + walk), which
`KnowledgeGraph.query` satisfies.
"""

from retrieval.graph.core import KnowledgeGraph
from retrieval.graph.model import (
    KINDS,
    RELATION_INFO,
    RELATIONS,
    SEED_DOC,
    Edge,
    Node,
    book_node_id,
    person_node_id,
    scripture_node_id,
)
from retrieval.graph.queries import GraphQueries
from retrieval.graph.seed import DEFAULT_SEED, GraphSeedError, load_seed
from retrieval.graph.walking import GraphWalk

__all__ = [
    "DEFAULT_SEED",
    "KINDS",
    "RELATIONS",
    "RELATION_INFO",
    "SEED_DOC",
    "Edge",
    "GraphQueries",
    "GraphSeedError",
    "GraphWalk",
    "KnowledgeGraph",
    "Node",
    "book_node_id",
    "load_seed",
    "person_node_id",
    "scripture_node_id",
]
