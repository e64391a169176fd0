from __future__ import annotations

import math

import pytest

from retrieval.keyword import Bm25Encoder, token_index


def _split(s: str) -> list[str]:
    return s.split()


def test_token_index_is_stable_31_bit() -> None:
    assert token_index("经纶") == token_index("经纶")
    assert 0 <= token_index("economy") < 2**31
    assert token_index("a") != token_index("b")


def test_document_saturated_tf() -> None:
    enc = Bm25Encoder(_split, k1=1.2, b=0.75, avgdl=4)
    v = enc.encode_document("x y x z")
    assert len(v.indices) == 3 and list(v.indices) == sorted(v.indices)
    got = dict(zip(v.indices, v.values, strict=True))
    norm = 1.2 * (1 - 0.75 + 0.75 * 4 / 4)
    assert math.isclose(got[token_index("x")], 2 * 2.2 / (2 + norm))
    assert math.isclose(got[token_index("y")], 1 * 2.2 / (1 + norm))


def test_longer_documents_score_lower_per_term() -> None:
    enc = Bm25Encoder(_split, avgdl=4)
    short = dict(
        zip(*[enc.encode_document("x y").indices, enc.encode_document("x y").values], strict=True)
    )
    long_doc = enc.encode_document("x " + "y " * 20)
    long_ = dict(zip(long_doc.indices, long_doc.values, strict=True))
    assert short[token_index("x")] > long_[token_index("x")]


def test_empty_document() -> None:
    assert Bm25Encoder(_split).encode_document("").indices == ()


def test_query_weights_with_expansions() -> None:
    enc = Bm25Encoder(_split)
    v = enc.encode_query("a b a", {"c": 0.5, "a": 0.5, "d e": 0.3})
    got = dict(zip(v.indices, v.values, strict=True))
    assert got == {
        token_index("a"): 1.0,
        token_index("b"): 1.0,
        token_index("c"): 0.5,
        token_index("d"): 0.3,
        token_index("e"): 0.3,
    }


def test_default_tokenizer_is_jieba() -> None:
    enc = Bm25Encoder()
    assert enc.query_weights("神圣的分赐") == pytest.approx({"神圣的分赐": 1.0})


def test_extra_tokens_count_as_words() -> None:
    enc = Bm25Encoder(_split, avgdl=3)
    v = enc.encode_document("x y", ["Eph.1.10"])
    assert token_index("Eph.1.10") in v.indices
    assert v == enc.encode_tokens(["x", "y", "Eph.1.10"])
