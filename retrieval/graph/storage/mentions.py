"""Which chunks mention which nodes, on whose word: the graph's largest table, kept compact.

A million-chunk library holds a few million mentions. As Python dicts of sets they took 2.6 GB
and 3.5 minutes to load (bench/results/million.md); here they are numpy arrays:

- chunk and node ids are interned to integers (a chunk's number never changes while the
  process runs, so the names of deleted chunks stay until the next start);
- every node keeps a sorted int32 array of the chunks that mention it and, in step, how many
  documents contribute each of those mentions (a mention lives while one of them does);
- every document keeps the sorted pairs it contributed (int64: node << 32 | chunk), so
  dropping a document removes exactly its share.

Writes are buffered and merged into the arrays on the next read: one merge per document write,
not one array copy per mention.

`export` / `restore` carry the read side (what the walk needs) to and from a snapshot; a
restored index answers every read but takes no writes (it has no per-document shares).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int32]
Pairs = npt.NDArray[np.int64]
Counts = npt.NDArray[np.uint16]

_LOW = np.int64(0xFFFFFFFF)
_EMPTY_CHUNKS: Ints = np.zeros(0, dtype=np.int32)
_EMPTY_PAIRS: Pairs = np.zeros(0, dtype=np.int64)

MentionRow = tuple[str, str, str]  # (document, chunk, node), as GraphDB stores them


@dataclass(frozen=True, slots=True)
class Packed:
    """Stored rows, compacted: (document, first row, end row) runs, node numbers, chunk ids."""

    runs: list[tuple[str, int, int]]
    nodes: Pairs
    chunks: npt.NDArray[np.bytes_]


class Mentions:
    def __init__(self) -> None:
        # Chunk numbers: the chunks known at start-up are 0..n-1 in the order of their ids,
        # kept as one fixed-width bytes array (36 bytes a UUID, where a dict of str would take
        # ~180 bytes); chunks added later are numbered on from n in a dict.
        self._base: npt.NDArray[np.bytes_] = np.zeros(0, dtype="S1")
        self._later_ix: dict[str, int] = {}
        self._later_names: list[str] = []
        self._node_ix: dict[str, int] = {}
        self._node_names: list[str] = []
        self._node_chunks: dict[int, Ints] = {}  # node → sorted chunks that mention it
        self._node_docs: dict[int, Counts] = {}  # node → documents behind each of those
        self._doc_pairs: dict[str, Pairs] = {}  # document → sorted pairs it contributed
        self._pending: dict[str, list[int]] = {}  # document → pairs not merged yet
        self._degree: Ints = np.zeros(1024, dtype=np.int32)  # chunk → nodes it mentions
        self._chunks_live = 0
        self._read_only = False

    # ---- snapshots --------------------------------------------------------------------------

    def export(self) -> dict[str, npt.NDArray[np.generic]]:
        """The read side as arrays: chunk names, each node's sorted chunks (node numbers,
        offsets, chunk numbers), the chunks' degrees and the node names."""
        self._settle()
        nodes = sorted(self._node_chunks)
        lengths = [len(self._node_chunks[n]) for n in nodes]
        later = np.array(self._later_names, dtype=np.str_)
        return {
            "chunk_base": self._base,
            "chunk_later": later if len(later) else np.zeros(0, dtype="U1"),
            "node_names": np.array(self._node_names or [""], dtype=np.str_)[
                : len(self._node_names)
            ],
            "mention_nodes": np.array(nodes, dtype=np.int32),
            "mention_offsets": np.concatenate(([0], np.cumsum(lengths, dtype=np.int64))),
            "mention_chunks": (
                np.concatenate([self._node_chunks[n] for n in nodes]) if nodes else _EMPTY_CHUNKS
            ),
            "degree": self._degree[: self._chunk_count],
            "chunks_live": np.array([self._chunks_live], dtype=np.int64),
        }

    @classmethod
    def restore(cls, arrays: dict[str, npt.NDArray[np.generic]]) -> Mentions:
        """A read-only index from `export`'s arrays."""
        m = cls()
        m._base = np.asarray(arrays["chunk_base"], dtype=np.bytes_)
        m._later_names = [str(n) for n in arrays["chunk_later"].tolist()]
        m._later_ix = {n: len(m._base) + i for i, n in enumerate(m._later_names)}
        m._node_names = [str(n) for n in arrays["node_names"].tolist()]
        m._node_ix = {n: i for i, n in enumerate(m._node_names)}
        offsets = arrays["mention_offsets"].tolist()
        chunks = np.asarray(arrays["mention_chunks"], dtype=np.int32)
        for k, node in enumerate(arrays["mention_nodes"].tolist()):
            m._node_chunks[node] = chunks[offsets[k] : offsets[k + 1]]
        degree = np.asarray(arrays["degree"], dtype=np.int32)
        m._degree = np.concatenate((degree, np.zeros(1024, dtype=np.int32)))
        m._chunks_live = int(arrays["chunks_live"][0])
        m._read_only = True
        return m

    def _writable(self) -> None:
        if self._read_only:
            raise RuntimeError("a restored mention index is read-only")

    # ---- interning ------------------------------------------------------------------------

    @property
    def _chunk_count(self) -> int:
        return len(self._base) + len(self._later_names)

    def _find(self, chunk: str) -> int | None:
        i = self._later_ix.get(chunk)
        if i is not None or not len(self._base):
            return i
        key = chunk.encode()
        if len(key) > self._base.itemsize:  # would be compared truncated
            return None
        j = int(np.searchsorted(self._base, key))
        return j if j < len(self._base) and self._base[j] == key else None

    def _chunk(self, chunk: str) -> int:
        i = self._find(chunk)
        if i is None:
            i = self._later_ix[chunk] = self._chunk_count
            self._later_names.append(chunk)
        return i

    def _node(self, node: str) -> int:
        i = self._node_ix.get(node)
        if i is None:
            i = self._node_ix[node] = len(self._node_names)
            self._node_names.append(node)
        return i

    def _grow_degree(self) -> None:
        if self._chunk_count > len(self._degree):
            size = max(self._chunk_count, 2 * len(self._degree))
            grown = np.zeros(size, dtype=np.int32)
            grown[: len(self._degree)] = self._degree
            self._degree = grown

    # ---- writes ---------------------------------------------------------------------------

    def add(self, doc: str, pairs: Iterable[tuple[str, str]]) -> None:
        """`doc` says these (chunk, node) pairs are mentions (adding one again changes nothing)."""
        self._writable()
        buffer = self._pending.setdefault(doc, [])
        for chunk, node in pairs:
            buffer.append(self._node(node) << 32 | self._chunk(chunk))

    def pack(self, rows: Sequence[MentionRow]) -> Packed:
        """A batch of stored rows, compacted for `load`."""
        nodes = np.empty(len(rows), dtype=np.int64)
        runs: list[tuple[str, int, int]] = []
        start, current = 0, ""
        node_ix, node_names = self._node_ix, self._node_names
        for k, (doc, _, node) in enumerate(rows):
            if doc != current:  # rows of one write are contiguous: few runs a batch
                if k:
                    runs.append((current, start, k))
                start, current = k, doc
            n = node_ix.get(node)
            if n is None:
                n = node_ix[node] = len(node_names)
                node_names.append(node)
            nodes[k] = n
        if len(rows):
            runs.append((current, start, len(rows)))
        chunks = [chunk.encode() for _, chunk, _ in rows]
        return Packed(runs, nodes, np.array(chunks, dtype=np.bytes_))

    def load(self, batches: Sequence[Packed]) -> None:
        """Start-up: every stored row (`pack`ed), into an empty index."""
        self._writable()
        if self._chunk_count or self._node_chunks or self._pending:
            raise RuntimeError("Mentions.load fills an empty index")
        if not batches:
            return
        width = max(b.chunks.itemsize for b in batches)
        names, numbers = np.unique(
            np.concatenate([b.chunks.astype(f"S{width}") for b in batches]), return_inverse=True
        )
        self._base = names
        docs: dict[str, int] = {}
        doc_of = np.empty(len(numbers), dtype=np.int64)
        offset = 0
        for b in batches:
            for doc, start, end in b.runs:
                doc_of[offset + start : offset + end] = docs.setdefault(doc, len(docs))
            offset += len(b.nodes)
        pairs = np.concatenate([b.nodes for b in batches]) << 32 | numbers.astype(np.int64)
        # One sort by (document, pair) instead of a sort per document.
        order = np.lexsort((pairs, doc_of))
        pairs, doc_of = pairs[order], doc_of[order]
        keep = np.ones(len(pairs), dtype=bool)
        keep[1:] = (pairs[1:] != pairs[:-1]) | (doc_of[1:] != doc_of[:-1])
        pairs, doc_of = pairs[keep], doc_of[keep]
        bounds = np.searchsorted(doc_of, np.arange(len(docs) + 1))
        for doc, i in docs.items():
            self._doc_pairs[doc] = pairs[bounds[i] : bounds[i + 1]]
        self._adjust(pairs, +1)

    def drop_doc(self, doc: str) -> None:
        """Remove `doc`'s share: mentions no other document contributes go."""
        self._writable()
        self._pending.pop(doc, None)
        pairs = self._doc_pairs.pop(doc, None)
        if pairs is not None and len(pairs):
            self._adjust(pairs, -1)

    def drop_chunks(self, chunks: Iterable[str]) -> None:
        """Forget which nodes these chunks mention, whatever document added the mention."""
        self._writable()
        self._settle()
        wanted = [i for i in map(self._find, chunks) if i is not None]
        if not wanted:
            return
        target = np.array(sorted(set(wanted)), dtype=np.int64)
        removed: list[Pairs] = []
        for doc, pairs in list(self._doc_pairs.items()):
            hit = np.isin(pairs & _LOW, target)
            if hit.any():
                removed.append(pairs[hit])
                self._doc_pairs[doc] = pairs[~hit]
        if removed:
            self._adjust(np.concatenate(removed), -1)

    def _settle(self) -> None:
        """Merge the buffered writes into the arrays."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        self._grow_degree()
        fresh: list[Pairs] = []
        for doc, buffered in pending.items():
            pairs = np.unique(np.array(buffered, dtype=np.int64))
            known = self._doc_pairs.get(doc)
            if known is not None and len(known):
                pairs = np.setdiff1d(pairs, known, assume_unique=True)
                if not len(pairs):
                    continue
                self._doc_pairs[doc] = np.union1d(known, pairs)
            else:
                self._doc_pairs[doc] = pairs
            fresh.append(pairs)
        if fresh:
            self._adjust(np.concatenate(fresh), +1)

    def _adjust(self, pairs: Pairs, sign: int) -> None:
        """Count `pairs` (repeats allowed: one per contributing document) in or out of the
        node arrays; a mention appears with its first document and goes with its last."""
        if not len(pairs):
            return
        self._grow_degree()
        pairs, times = np.unique(pairs, return_counts=True)
        nodes = (pairs >> 32).astype(np.int64)
        chunks = (pairs & _LOW).astype(np.int32)
        bounds = np.flatnonzero(np.diff(nodes)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [len(pairs)]))
        appeared: list[Ints] = []  # chunks that mention a node they did not before
        vanished: list[Ints] = []
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            ks = times[s:e].astype(np.int64)
            self._adjust_node(int(nodes[s]), chunks[s:e], ks, sign, appeared, vanished)
        for changed, step in ((appeared, 1), (vanished, -1)):
            if changed:
                touched, times = np.unique(np.concatenate(changed), return_counts=True)
                was_live = int(np.count_nonzero(self._degree[touched] > 0))
                self._degree[touched] += (step * times).astype(np.int32)
                self._chunks_live += int(np.count_nonzero(self._degree[touched] > 0)) - was_live

    def _adjust_node(
        self,
        node: int,
        cs: Ints,
        ks: npt.NDArray[np.int64],
        sign: int,
        appeared: list[Ints],
        vanished: list[Ints],
    ) -> None:
        """One node's chunks `cs` counted `ks` times in (sign > 0) or out; the chunks it newly
        mentions go to `appeared`, those it no longer mentions to `vanished`."""
        arr = self._node_chunks.get(node, _EMPTY_CHUNKS)
        if not len(arr) and sign > 0:  # a node's first mentions (all of them at start-up)
            self._node_chunks[node] = cs
            self._node_docs[node] = ks.astype(np.uint16)
            appeared.append(cs)
            return
        docs = self._node_docs[node].astype(np.int64)
        pos = np.searchsorted(arr, cs)
        present = pos < len(arr)
        present[present] = arr[pos[present]] == cs[present]
        if sign > 0:
            docs[pos[present]] += ks[present]
            new = ~present
            arr = np.insert(arr, pos[new], cs[new])
            docs = np.insert(docs, pos[new], ks[new])
            appeared.append(cs[new])
        else:
            at = pos[present]
            docs[at] -= ks[present]
            gone = at[docs[at] <= 0]
            vanished.append(arr[gone])
            arr = np.delete(arr, gone)
            docs = np.delete(docs, gone)
        if len(arr):
            self._node_chunks[node] = arr
            self._node_docs[node] = docs.astype(np.uint16)
        else:
            self._node_chunks.pop(node, None)
            self._node_docs.pop(node, None)

    # ---- reads ----------------------------------------------------------------------------

    def count(self, node: str) -> int:
        """How many chunks mention `node`."""
        self._settle()
        i = self._node_ix.get(node)
        return 0 if i is None else len(self._node_chunks.get(i, ()))

    def chunk_numbers(self, node: str) -> Ints:
        """The (interned, sorted) chunks that mention `node`; see `names`."""
        self._settle()
        i = self._node_ix.get(node)
        return _EMPTY_CHUNKS if i is None else self._node_chunks.get(i, _EMPTY_CHUNKS)

    def names(self, numbers: Ints | Sequence[int]) -> list[str]:
        """The chunks' names, by number (`chunk_numbers`)."""
        index = np.asarray(numbers, dtype=np.int64)
        base, later, n = self._base, self._later_names, len(self._base)
        if not index.size or index.max() < n:  # all named at load: one gather, not one each
            return [name.decode() for name in base[index].tolist()]
        return [base[i].decode() if i < n else later[i - n] for i in index.tolist()]

    def chunks(self, node: str) -> set[str]:
        return set(self.names(self.chunk_numbers(node)))

    def has_chunk(self, chunk: str) -> bool:
        self._settle()
        i = self._find(chunk)
        return i is not None and bool(self._degree[i] > 0)

    @property
    def chunk_span(self) -> int:
        """One past the highest chunk number (`chunk_numbers` are below it)."""
        self._settle()
        return self._chunk_count

    @property
    def chunk_total(self) -> int:
        """Chunks that mention at least one node."""
        self._settle()
        return self._chunks_live

    @property
    def total(self) -> int:
        """Distinct (chunk, node) mentions."""
        self._settle()
        return sum(len(a) for a in self._node_chunks.values())

    def documents(self) -> set[str]:
        self._settle()
        return {d for d, pairs in self._doc_pairs.items() if len(pairs)}

    def rows(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """Every (node, chunk, contributing documents), sorted (for snapshots)."""
        self._settle()
        by_pair: dict[tuple[str, str], list[str]] = {}
        for doc, pairs in self._doc_pairs.items():
            for p in pairs.tolist():
                key = (self._node_names[p >> 32], self.names([p & 0xFFFFFFFF])[0])
                by_pair.setdefault(key, []).append(doc)
        return sorted((n, c, tuple(sorted(ds))) for (n, c), ds in by_pair.items())
