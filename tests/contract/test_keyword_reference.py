"""Our BM25 (client-side saturated tf + Qdrant Edge's IDF modifier) against rank_bm25.

A fixture corpus of ~200 short original Chinese and English documents is generated from a
seeded vocabulary; both rankers see the same jieba tokens. Rankings differ slightly by design
(Qdrant's IDF is ln(1 + (N-n+0.5)/(n+0.5)); BM25Okapi uses ln((N-n+0.5)/(n+0.5)) with an
epsilon floor), so the test asserts the mean top-10 overlap, not identity.
"""

from __future__ import annotations

import random
from pathlib import Path

from rank_bm25 import BM25Okapi

from retrieval.fakes import HashEmbedder
from retrieval.keyword import Bm25Encoder
from retrieval.store.edge import EdgeStore
from retrieval.text import search_form, tokenize
from retrieval.types import Chunk, IndexedChunk, chunk_id, content_hash

ZH_TERMS = [
    "神圣分赐",
    "有机救恩",
    "经纶",
    "召会生活",
    "调和",
    "变化",
    "重生",
    "圣别",
    "内住",
    "新耶路撒冷",
    "基督的身体",
    "三一神",
    "祷读",
    "呼求主名",
    "生命",
    "恩典",
    "十字架",
    "复活",
    "国度",
    "职事",
    "信心",
    "建造",
    "模成",
    "荣化",
    "称义",
    "新人",
    "新造",
]
ZH_FILLER = [
    "弟兄们",
    "每天早晨",
    "在聚会中",
    "安静地",
    "一同",
    "喜乐地",
    "仔细",
    "实际地",
    "读经",
    "交通",
    "分享",
    "经历",
    "认识",
    "享受",
    "追求",
    "看见",
    "学习",
    "操练",
]
EN_TERMS = [
    "dispensing",
    "economy",
    "mingling",
    "transformation",
    "regeneration",
    "sanctification",
    "indwelling",
    "church",
    "life",
    "spirit",
    "grace",
    "cross",
    "resurrection",
    "kingdom",
    "ministry",
    "faith",
    "building",
    "glorification",
    "justification",
    "creation",
    "body",
]
EN_FILLER = [
    "brothers",
    "morning",
    "meeting",
    "quietly",
    "together",
    "joyfully",
    "carefully",
    "practically",
    "reading",
    "fellowship",
    "sharing",
    "knowing",
    "enjoying",
    "pursuing",
]


def _zipf_choice(rng: random.Random, words: list[str]) -> str:
    weights = [1.0 / (i + 1) for i in range(len(words))]
    return rng.choices(words, weights)[0]


def _corpus(rng: random.Random) -> list[str]:
    docs = []
    for i in range(200):
        zh = i % 3 != 2
        terms, filler = (ZH_TERMS, ZH_FILLER) if zh else (EN_TERMS, EN_FILLER)
        sentences = []
        for _ in range(rng.randint(1, 6)):
            words = [_zipf_choice(rng, terms) for _ in range(rng.randint(1, 3))]
            words += rng.sample(filler, rng.randint(1, 4))
            rng.shuffle(words)
            sentences.append(("".join(words) + "。") if zh else (" ".join(words) + "."))
        docs.append(("" if zh else " ").join(sentences))
    return docs


def _queries(rng: random.Random) -> list[str]:
    out = []
    for i in range(40):
        terms = ZH_TERMS if i % 2 else EN_TERMS
        out.append(" ".join(rng.sample(terms, rng.randint(1, 3))))
    return out


async def test_top10_overlap_with_rank_bm25(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    docs = [search_form(d) for d in _corpus(rng)]
    tokens = [tokenize(d) for d in docs]
    avgdl = sum(map(len, tokens)) / len(tokens)
    encoder = Bm25Encoder(k1=1.2, b=0.75, avgdl=avgdl)
    reference = BM25Okapi(tokens, k1=1.2, b=0.75)

    embedder = HashEmbedder(8)
    store = await EdgeStore.open(tmp_path / "qdrant", 8)
    try:
        ids = [chunk_id("corpus", f"doc{i}", 0, content_hash(d)) for i, d in enumerate(docs)]
        dense = await embedder.embed_passages(docs)
        await store.upsert(
            [
                IndexedChunk(
                    Chunk(
                        id=ids[i], text=d, search_text=d, doc_id=f"doc{i}", source="s", type="book"
                    ),
                    dense[i],
                    encoder.encode_tokens(tokens[i]),
                )
                for i, d in enumerate(docs)
            ]
        )
        overlaps = []
        for q in _queries(rng):
            q_tokens = list(dict.fromkeys(tokenize(search_form(q))))
            assert q_tokens, q
            ours = [
                h.chunk.doc_id for h in await store.search_sparse(encoder.encode_query(q), limit=10)
            ]
            scores = reference.get_scores(q_tokens)
            ranked = sorted(range(len(docs)), key=lambda i: (-scores[i], i))
            theirs = [f"doc{i}" for i in ranked[:10] if scores[i] > 0]
            denominator = min(10, max(len(ours), len(theirs)))
            overlaps.append(len(set(ours) & set(theirs)) / denominator if denominator else 1.0)
    finally:
        await store.close()
    mean = sum(overlaps) / len(overlaps)
    print(
        f"\nBM25 top-10 overlap vs rank_bm25 over {len(overlaps)} queries: mean {mean:.3f}, min {min(overlaps):.2f}"
    )
    assert mean >= 0.7
