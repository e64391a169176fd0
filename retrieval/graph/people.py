"""People and topics a document adds to the graph (called by `retrieval.graph.grow`).

- **Persons.** The graph's dictionary of persons is its person nodes (the seed lists 保罗,
  约翰, 彼得 … with Traditional and English aliases); the linker finds them in every chunk.
  A name the dictionary lacks becomes a person when the text marks it as one, by statistics:
  jieba tags it a personal name and it stands right before a verb of speaking or seeing
  (说, 对, 看见, 写 …) in at least PERSON_MIN_CUES places of the document.
- **What a person discusses.** A person 阐明 the concepts named in the chunks that name him:
  those named with him in at least PAIR_MIN chunks (every one, for a person named in one
  chunk), the PERSON_KEEP most frequent, weighted by the share of his chunks naming it.
  A person named throughout the document (in THROUGHOUT of its chunks, two at least: 保罗 in
  both sections of a two-section message) is its subject as much as its concepts are: he
  阐明 what the document expounds, then what any of his chunks names — not only what two of
  them share, which sections about different things never do.
- **Topics.** An outline's title and its first-level points, and a book's or message's
  section headings (their numbering removed), are topic nodes; the outline's title 包含 its
  points, the book 包含 its sections, and a topic 包含 the concepts its chunks name most.
  A heading that is already a topic's name uses that topic; one that names a concept makes
  no topic: the concept stands in the outline's title or the book, 包含 it.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from retrieval.graph.linking import TermIndex, fold, term_key
from retrieval.graph.model import Node, book_node_id, person_node_id
from retrieval.types import Chunk

PERSON_MIN_CUES = 2
PAIR_MIN = 2
PERSON_KEEP = 6
THROUGHOUT = 0.5  # share of a document's chunks that name a person "throughout" it
TOPIC_KEEP = 4
TOPIC_LABEL = (3, 20)  # characters a topic label may have (结语, 引言: no topic)
_NAME_TAGS = frozenset({"nr", "nrt", "nrfg", "ns"})  # jieba tags transliterations ns too
_PERSON_CUES = frozenset(
    "说 对 看见 写 写信 祷告 回答 吩咐 告诉 劝 责备 见证 宣告 应许 问 答".split()
)
_CJK_NAME = re.compile(r"^[\u3400-\u9fff]{2,4}$")
_HEADING_MARKER = re.compile(
    r"^\s*(?:第[一二三四五六七八九十百零〇两\d]+(?:部分|[篇章节部卷课段回讲])|[壹贰叁肆伍陆柒捌玖拾]+|"
    r"[一二三四五六七八九十]+|[（(][^)）]{1,4}[)）]|\d+(?:\.\d+)*|[A-Za-z](?=[.．、\s　]))"
    r"[、.．:：\s　]*"
)


class Sink(Protocol):
    """Where a document's growth goes (`grow.Growth`)."""

    def node(self, node: Node) -> str: ...
    def edge(self, src: str, relation: str, dst: str, weight: float = 1.0) -> None: ...


Cut = Callable[[str], list[tuple[str, str]]]


def named_persons(
    chunks: Sequence[Chunk],
    known: TermIndex,
    cut: Cut,
    common: Callable[[str], bool],
    to_traditional: Callable[[str], str],
    out: Sink,
) -> dict[str, str]:
    """Person nodes for the names this document marks as persons and the dictionary lacks;
    returns folded name → node id (for linking the document's chunks)."""
    cues: Counter[str] = Counter()
    for c in chunks:
        if c.language == "en":
            continue
        words = cut(fold(c.text))
        for (word, flag), (after, _) in itertools.pairwise(words):
            if flag in _NAME_TAGS and _CJK_NAME.match(word) and after in _PERSON_CUES:
                cues[word] += 1
    added: dict[str, str] = {}
    for name, n in sorted(cues.items()):
        if n < PERSON_MIN_CUES or term_key(name) in known.terms or common(name):
            continue
        traditional = to_traditional(name)
        aliases = (traditional,) if traditional != name else ()
        added[term_key(name)] = out.node(Node(person_node_id(name), "person", name, aliases))
    return added


def person_relations(
    persons: Mapping[str, list[str]],
    concepts: Mapping[str, list[str]],
    out: Sink,
    expounded: Sequence[str] = (),
) -> None:
    """person 阐明 concept for the concepts a person's chunks name (chunk → ids, in order);
    `expounded`: the concepts the whole document expounds (`grow._expounds`), which a person
    named throughout it 阐明 first."""
    own: Counter[str] = Counter()
    pairs: dict[str, Counter[str]] = defaultdict(Counter)
    for chunk_id, people in persons.items():
        for person in dict.fromkeys(people):
            own[person] += 1
            pairs[person].update(list(dict.fromkeys(concepts.get(chunk_id, ()))))
    spread = max(2, THROUGHOUT * len(persons))
    for person, together in sorted(pairs.items()):
        throughout = own[person] >= spread
        first = [c for c in expounded if c.startswith("concept:")] if throughout else []
        # a person named in one chunk: what it discusses; named throughout: what any names
        need = 1 if throughout else min(PAIR_MIN, own[person])
        ranked = sorted(
            (c for c, n in together.items() if n >= need and c.startswith("concept:")),
            key=lambda c: (c not in first, -together[c], c),
        )
        for concept in list(dict.fromkeys([*first, *ranked]))[:PERSON_KEEP]:
            share = max(together[concept], 1) / own[person]
            out.edge(person, "阐明", concept, round(min(1.0, share), 3))


def heading_label(heading: str) -> str | None:
    """A section heading without its numbering (贰　保罗的职事 → 保罗的职事); None when what
    is left cannot name a topic."""
    label = _HEADING_MARKER.sub("", heading.strip(), count=1).strip()
    lo, hi = TOPIC_LABEL
    return label if lo <= len(label) <= hi and not label.isdigit() else None


def topics(
    chunks: Sequence[Chunk],
    known: TermIndex,
    concepts: Mapping[str, list[str]],
    out: Sink,
) -> dict[str, list[str]]:
    """Topic nodes for the document's outline title and sections; returns chunk → the topic
    ids it belongs to (its mentions)."""
    first = chunks[0]
    book = book_node_id(first.source)
    sections: dict[str, list[str]] = defaultdict(list)  # topic id → its chunks
    parent: dict[str, str] = {}
    title_topic = _topic(first.source, known, out) if first.type == "outline" else None
    for c in chunks:
        heading = _section_of(c)
        topic = _topic(heading, known, out) if heading else None
        if topic is not None:
            sections[topic].append(c.id)
            parent.setdefault(topic, title_topic or book)
        if title_topic is not None:
            sections[title_topic].append(c.id)
    if title_topic is not None:
        parent.pop(title_topic, None)
        out.edge(book, "包含", title_topic)
    belongs: dict[str, list[str]] = defaultdict(list)
    for topic, chunk_ids in sections.items():
        if topic in parent:
            out.edge(parent[topic], "包含", topic)
        if not topic.startswith("topic:"):
            continue  # a heading naming a concept: the concept keeps its own relations
        spread = Counter(n for cid in chunk_ids for n in dict.fromkeys(concepts.get(cid, ())))
        ranked = sorted(
            (
                n
                for n in spread
                if spread[n] >= min(PAIR_MIN, len(chunk_ids)) and n.startswith("concept:")
            ),
            key=lambda n: (-spread[n], n),
        )[:TOPIC_KEEP]
        for concept in ranked:
            out.edge(topic, "包含", concept)
        for cid in chunk_ids:
            belongs[cid].append(topic)
    return belongs


def _section_of(c: Chunk) -> str:
    """The heading a chunk's topic comes from: an outline's first-level point, a book's or
    message's innermost section; none for footnotes and verses."""
    if not c.chapter or c.type not in ("outline", "book", "message"):
        return ""
    parts = c.chapter.split(" > ")
    return parts[0] if c.type == "outline" else parts[-1]


def _topic(heading: str, known: TermIndex, out: Sink) -> str | None:
    label = heading_label(heading)
    if label is None:
        return None
    existing = sorted(known.terms.get(term_key(label), ()))
    if existing:  # a topic or concept already (the heading names it); no person or book
        return existing[0] if existing[0].startswith(("topic:", "concept:")) else None
    return out.node(Node(f"topic:{label}", "topic", label))
