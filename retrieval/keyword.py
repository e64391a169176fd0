"""BM25 as sparse vectors: the client computes saturated term frequencies, the store the IDF.

A document's vector holds, for each distinct token t with frequency tf in a document of
`len` tokens, `tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avgdl))` at index `hash(t)`.
The store's sparse index uses the IDF modifier (Qdrant `Modifier.Idf`), so the dot product
with a query vector of term weights is BM25 — and deleting or replacing documents keeps the
statistics exact with no client-side corpus state. `avgdl` is a fixed constant (not the live
average) so vectors never need recomputing; changing it (or `k1`/`b`) needs a re-index.

Token → index is CRC-32 masked to 31 bits: stable across processes and versions. Two tokens
that collide are counted as one term; at 31 bits that is rare and costs a little precision,
never correctness of deletes.
"""

from __future__ import annotations

import functools
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval.types import Chunk, SparseVector

if TYPE_CHECKING:
    from retrieval.text import TokenizerSpec

TokenizeFn = Callable[[str], list[str]]


def token_index(token: str) -> int:
    return zlib.crc32(token.encode("utf-8")) & 0x7FFFFFFF


def _sparse(weights: Mapping[int, float]) -> SparseVector:
    items = sorted(weights.items())
    return SparseVector(tuple(i for i, _ in items), tuple(float(v) for _, v in items))


class Bm25Encoder:
    def __init__(
        self,
        tokenizer: TokenizeFn | None = None,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        avgdl: float = 200.0,
    ) -> None:
        if tokenizer is None:
            from retrieval.text import tokenize

            tokenizer = tokenize
        if avgdl <= 0:
            raise ValueError("avgdl must be positive")
        self.tokenize: TokenizeFn = tokenizer
        self.k1 = k1
        self.b = b
        self.avgdl = avgdl

    def encode_tokens(self, tokens: Iterable[str]) -> SparseVector:
        counts = Counter(token_index(t) for t in tokens)
        length = sum(counts.values())
        if not length:
            return SparseVector((), ())
        norm = self.k1 * (1 - self.b + self.b * length / self.avgdl)
        return _sparse({i: tf * (self.k1 + 1) / (tf + norm) for i, tf in counts.items()})

    def encode_document(self, text: str, extra_tokens: Iterable[str] = ()) -> SparseVector:
        """`extra_tokens` (e.g. the chunk's OSIS verse ids) count as words of the document."""
        return self.encode_tokens([*self.tokenize(text), *extra_tokens])

    def encode_chunks(self, chunks: Sequence[Chunk]) -> list[SparseVector]:
        """Each chunk's vector: its search text's tokens, and the verse ids it cites (a query
        naming the verse matches)."""
        return [self.encode_document(c.search_text or c.text, c.scripture_refs) for c in chunks]

    def spec(self) -> KeywordSpec | None:
        """How to make this encoder in another process, when its tokenizer can say how it
        was made (a `retrieval.text.Tokenizer`); None for any other tokenizing function."""
        from retrieval.text import Tokenizer

        if not isinstance(self.tokenize, Tokenizer):
            return None
        spec = KeywordSpec(self.tokenize.spec(), self.k1, self.b, self.avgdl)
        _made[spec] = self  # this process makes no second one (see `KeywordSpec.encoder`)
        return spec

    def query_weights(
        self, text: str, expansions: Mapping[str, float] | None = None
    ) -> dict[str, float]:
        """Token → weight: the user's own tokens 1.0; expansion terms' tokens at their weight."""
        weights: dict[str, float] = dict.fromkeys(self.tokenize(text), 1.0)
        for term, w in (expansions or {}).items():
            for tok in self.tokenize(term):
                if w > weights.get(tok, 0.0):
                    weights[tok] = w
        return weights

    def encode_query(
        self, text: str, expansions: Mapping[str, float] | None = None
    ) -> SparseVector:
        merged: dict[int, float] = {}
        for tok, w in self.query_weights(text, expansions).items():
            i = token_index(tok)
            merged[i] = max(merged.get(i, 0.0), w)
        return _sparse(merged)


@dataclass(frozen=True, slots=True)
class KeywordSpec:
    """A `Bm25Encoder` as data (`Bm25Encoder.spec`): the reading process cuts a document's
    keyword tokens with the encoder this makes, the same cuts as the indexing process's."""

    tokenizer: TokenizerSpec
    k1: float
    b: float
    avgdl: float

    def encoder(self) -> Bm25Encoder:
        """The encoder this spec was taken from, in the process that took it (work meant for
        the reading process may run on a thread here while it starts); elsewhere one made
        once per process: the tokenizer's dictionary takes ~1 s to load."""
        return _made.get(self) or _encoder_for(self)


_made: dict[KeywordSpec, Bm25Encoder] = {}


@functools.lru_cache(maxsize=4)
def _encoder_for(spec: KeywordSpec) -> Bm25Encoder:
    return Bm25Encoder(spec.tokenizer.build(), k1=spec.k1, b=spec.b, avgdl=spec.avgdl)
