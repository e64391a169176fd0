"""Plain data that crosses every seam of the retrieval core."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

ChunkType = Literal["book", "message", "outline", "footnote", "bible", "novel"]
Language = Literal["zh", "en"]

# Namespaces keep the ministry corpus and each novel's plot memory apart in one store.
CORPUS_NAMESPACE = "corpus"

_ID_NAMESPACE = uuid.UUID("6f1d7c2e-4b8a-4e55-9d0c-5a1b0b2a7e11")


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(namespace: str, doc_id: str, position: int, text_hash: str) -> str:
    """Deterministic point id: the same chunk of the same document always maps to one id."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{namespace}|{doc_id}|{position}|{text_hash}"))


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable unit of text plus everything needed to cite, filter and delete it.

    `text` is the original (display, quotation); `search_text` is the Simplified, normalised
    form that embeddings and BM25 see.
    """

    id: str
    text: str
    search_text: str
    doc_id: str
    source: str
    type: ChunkType
    chapter: str = ""
    position: int = 0
    author: str = ""
    year: int | None = None
    era: str = ""
    language: Language = "zh"
    topic_tags: tuple[str, ...] = ()
    scripture_refs: tuple[str, ...] = ()
    namespace: str = CORPUS_NAMESPACE
    content_hash: str = ""
    ingested_at: str = ""
    # Free-form, filterable extras (novel: chapter_no, version, tags; outline: path).
    extra: Mapping[str, Any] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        """The stored form. `search_text` is left out when it is `text` itself (a Simplified
        source): half the payload a search reads, measured at 1M chunks."""
        out: dict[str, Any] = {"text": self.text}
        if self.search_text != self.text:
            out["search_text"] = self.search_text
        return out | {
            "doc_id": self.doc_id,
            "source": self.source,
            "type": self.type,
            "chapter": self.chapter,
            "position": self.position,
            "author": self.author,
            "year": self.year,
            "era": self.era,
            "language": self.language,
            "topic_tags": list(self.topic_tags),
            "scripture_refs": list(self.scripture_refs),
            "namespace": self.namespace,
            "content_hash": self.content_hash,
            "ingested_at": self.ingested_at,
            **{f"x_{k}": v for k, v in self.extra.items()},
        }

    @classmethod
    def from_payload(cls, point_id: str, payload: Mapping[str, Any]) -> Chunk:
        extra = {k[2:]: v for k, v in payload.items() if k.startswith("x_")}
        year = payload.get("year")
        text = str(payload.get("text", ""))
        return cls(
            id=str(point_id),
            text=text,
            search_text=str(payload.get("search_text", text)),
            doc_id=str(payload.get("doc_id", "")),
            source=str(payload.get("source", "")),
            type=payload.get("type", "book"),
            chapter=str(payload.get("chapter", "")),
            position=int(payload.get("position", 0) or 0),
            author=str(payload.get("author", "")),
            year=int(year) if year is not None else None,
            era=str(payload.get("era", "")),
            language=payload.get("language", "zh"),
            topic_tags=tuple(payload.get("topic_tags", ()) or ()),
            scripture_refs=tuple(payload.get("scripture_refs", ()) or ()),
            namespace=str(payload.get("namespace", CORPUS_NAMESPACE)),
            content_hash=str(payload.get("content_hash", "")),
            ingested_at=str(payload.get("ingested_at", "")),
            extra=extra,
        )


FilterValue = str | int | bool | Sequence[str] | Sequence[int]


@dataclass(frozen=True, slots=True)
class Filter:
    """Conjunction of field conditions. A sequence value means "any of"; `ranges` are inclusive.

    Keys are payload keys (`source`, `type`, `era`, `language`, `scripture_refs`, `namespace`,
    `doc_id`, or `x_<extra>` for extras). `ids` keeps the points whose id is one of them (the
    stores look ids up directly: at 1M points 30 ids cost 0.35 ms where matching them as a
    payload key cost 0.8-1.3 ms); `None` is no condition, an empty set matches nothing.
    """

    equals: Mapping[str, FilterValue] = field(default_factory=dict)
    ranges: Mapping[str, tuple[float | None, float | None]] = field(default_factory=dict)
    not_equals: Mapping[str, FilterValue] = field(default_factory=dict)
    ids: frozenset[str] | None = None

    def and_(self, other: Filter | None) -> Filter:
        if other is None:
            return self
        if self.ids is None or other.ids is None:
            ids = self.ids if other.ids is None else other.ids
        else:
            ids = self.ids & other.ids
        return Filter(
            equals={**self.equals, **other.equals},
            ranges={**self.ranges, **other.ranges},
            not_equals={**self.not_equals, **other.not_equals},
            ids=ids,
        )

    def matches(self, payload: Mapping[str, Any], point_id: str | None = None) -> bool:
        """Reference semantics, used by in-process fakes and the contract tests (`point_id`
        is the point's id, for `ids`)."""

        def hit(value: Any, wanted: FilterValue) -> bool:
            wanted_set = (
                set(wanted) if isinstance(wanted, list | tuple | set | frozenset) else {wanted}
            )
            if isinstance(value, list | tuple):
                return bool(wanted_set & set(value))
            return value in wanted_set

        if self.ids is not None and point_id not in self.ids:
            return False
        for key, wanted in self.equals.items():
            if not hit(payload.get(key), wanted):
                return False
        for key, wanted in self.not_equals.items():
            if hit(payload.get(key), wanted):
                return False
        for key, (low, high) in self.ranges.items():
            value = payload.get(key)
            if not isinstance(value, int | float):
                return False
            if low is not None and value < low:
                return False
            if high is not None and value > high:
                return False
        return True


@dataclass(frozen=True, slots=True)
class SparseVector:
    indices: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    """A chunk with its vectors, ready for a VectorStore."""

    chunk: Chunk
    dense: Sequence[float]
    sparse: SparseVector


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    chunk: Chunk
    score: float


@dataclass(slots=True)
class Hit:
    """A fused result: the chunk, its fused score and each track's rank (1-based) and score."""

    chunk: Chunk
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    track_scores: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PathStep:
    """One hop of a graph path: the relation (Chinese and English names), whether the edge
    points along the path, and the titles of the documents behind it ("seed" = curated)."""

    relation: str
    relation_en: str
    forward: bool = True
    sources: tuple[str, ...] = ()
    symmetric: bool = False  # 对应, 相关: no arrow


@dataclass(frozen=True, slots=True)
class GraphPath:
    """A path through the knowledge graph that explains a graph hit.

    `render("zh")` → "神圣分赐 —发展→ 有机救恩 ←包含— 重生" (a symmetric relation has no arrow:
    "召会 —相关— 帐幕"); `render("en")` uses the nodes' English labels (an English alias; for a
    concept without one, its CC-CEDICT name; else the Chinese label) and English relation
    names."""

    nodes: tuple[str, ...]  # node ids
    labels: tuple[str, ...]
    labels_en: Sequence[str]  # compares as a tuple; may look its labels up when first read
    steps: tuple[PathStep, ...]  # one fewer than nodes

    def render(self, lang: str = "zh") -> str:
        en = lang == "en"
        labels = self.labels_en if en else self.labels
        out = labels[0] if labels else ""
        for step, label in zip(self.steps, labels[1:], strict=True):
            name = step.relation_en if en else step.relation
            if step.symmetric:
                out += f" —{name}— {label}"
            else:
                out += f" —{name}→ {label}" if step.forward else f" ←{name}— {label}"
        return out

    def to_json(self) -> dict[str, Any]:
        """The path for `baibao search --json`: both renderings and each hop's provenance."""
        return {
            "path": self.render("zh"),
            "path_en": self.render("en"),
            "nodes": list(self.nodes),
            "steps": [
                {
                    "from": self.nodes[i] if s.forward else self.nodes[i + 1],
                    "to": self.nodes[i + 1] if s.forward else self.nodes[i],
                    "relation": s.relation,
                    "relation_en": s.relation_en,
                    "sources": list(s.sources),
                }
                for i, s in enumerate(self.steps)
            ],
        }
