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

import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from retrieval.types import SparseVector

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
