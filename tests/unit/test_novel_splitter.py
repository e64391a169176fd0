"""Both chunking backends meet the same contract (novel/splitter.py) on the same text: fixed
texts, and property tests on generated prose (short and long sentences, dialogue in quotes,
paragraphs, over-long sentences with and without clause marks)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from novel.splitter import (
    SplitConfig,
    UnitSplitter,
    builtin_units,
    langchain_units,
    split_spans,
    split_text,
)
from retrieval.sentences import split_sentences

PARA = "林远站在渡口，望着江面，心里想着师父临走前的那句话。"
TEXTS = [
    "\n\n".join(
        [PARA * 2, "“你在哪里？”他低声问道！苏晴没有回答；只是把灯笼举高了一些。" * 3] * 10
    ),
    "".join(chr(0x4E00 + (i * 7) % 997) for i in range(1700)),  # no punctuation: hard cuts
    "\n".join(f"第{i}行：风从江上吹来，吹动了船帆。" for i in range(120)),
    PARA * 3,  # shorter than one chunk
]
BACKENDS = [builtin_units, langchain_units]


def sentence_bounds(body: str, cfg: SplitConfig) -> tuple[set[int], list[tuple[int, int]]]:
    """Offsets where a sentence ends, and the spans of over-long sentences."""
    ends: set[int] = {0}
    long: list[tuple[int, int]] = []
    at = 0
    for s in split_sentences(body):
        if len(s) > cfg.sentence_max:
            long.append((at, at + len(s)))
        at += len(s)
        ends.add(at)
    return ends, long


def check_contract(text: str, units: UnitSplitter, cfg: SplitConfig) -> None:
    body = text.strip()
    spans = split_spans(text, cfg, units)
    chunks = split_text(text, cfg, units)
    assert chunks == [body[a:b] for a, b in spans]
    assert chunks and all(c.strip() for c in chunks)
    assert all(len(c) <= cfg.max_size for c in chunks)
    if len(body) <= cfg.max_size:
        assert chunks == [body]
        return
    assert all(len(c) >= cfg.min_size for c in chunks[:-1])
    ends, long = sentence_bounds(body, cfg)

    def whole(at: int) -> bool:  # a sentence boundary, or inside an over-long sentence
        return at in ends or any(a < at < b for a, b in long)

    assert spans[0][0] == 0 and spans[-1][1] == len(body)
    rebuilt = chunks[0]
    for (s1, e1), (s2, e2) in itertools.pairwise(spans):
        assert whole(e1) and whole(s2), (body[s1:e1][-20:], body[s2 : s2 + 20])
        m = e1 - s2
        assert cfg.overlap_min <= m <= cfg.overlap_min - 1 + cfg.sentence_max
        if any(cfg.overlap_min <= e1 - p <= cfg.overlap_max for p in ends if s1 < p < e1):
            assert m <= cfg.overlap_max  # the sentences allowed it
        assert e2 > e1  # every chunk adds new text
        rebuilt += body[e1:e2]
    assert rebuilt == body


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("units", BACKENDS)
def test_contract(text: str, units: UnitSplitter) -> None:
    cfg = SplitConfig()
    check_contract(text, units, cfg)
    # these texts allow the 80–130 overlap everywhere
    spans = split_spans(text, cfg, units)
    for (_, e1), (s2, _) in itertools.pairwise(spans):
        assert cfg.overlap_min <= e1 - s2 <= cfg.overlap_max


@pytest.mark.parametrize("units", BACKENDS)
def test_units_lose_nothing(units: UnitSplitter) -> None:
    for text in TEXTS:
        pieces = units(text, 50)
        assert "".join(pieces) == text and all(len(p) <= 50 for p in pieces)


def test_chunks_end_at_sentence_ends_not_at_commas() -> None:
    text = "".join(f"第{i}句，风从江上吹来，吹动了船帆，也吹乱了她的头发。" for i in range(40))
    chunks = split_text(text)
    assert len(chunks) > 1
    assert all(c.endswith("。") for c in chunks)  # never at a comma (the old splitter did)
    assert all(c.startswith("第") for c in chunks)  # and never start mid-sentence


def test_an_over_long_sentence_is_cut_at_clause_marks_into_small_pieces() -> None:
    clause = "他沿着江岸一直走，"
    long = clause * 100 + "终于到了。"  # one sentence of 905 characters
    chunks = split_text("开头一句。" + long + "结尾一句。")
    inner = [c for c in chunks[:-1] if not c.endswith("。")]
    assert inner and all(c.endswith("，") for c in inner)  # cut at a clause mark


def test_empty() -> None:
    assert split_text("  \n\n ") == []
    assert split_spans("") == []


# ---- property tests ---------------------------------------------------------------------------

_CJK = st.sampled_from(list("风江船灯她他说走看夜雨山门窗楼人心里远近来去一不了的是在有我你"))


@st.composite
def sentences(draw: st.DrawFn) -> str:
    size = draw(st.sampled_from([(2, 20), (20, 70), (70, 160), (160, 420)]))
    words = draw(st.lists(_CJK, min_size=size[0], max_size=size[1]))
    body = "".join(words)
    commas = draw(st.lists(st.integers(0, max(0, len(body) - 1)), max_size=len(body) // 12))
    for at in sorted(set(commas), reverse=True):
        body = body[:at] + "，" + body[at:]
    end = draw(st.sampled_from(["。", "！", "？", "……", "", "。”", "；"]))
    if end == "。”":
        body = "“" + body
    return body + end


@st.composite
def prose(draw: st.DrawFn) -> str:
    parts = draw(st.lists(sentences(), min_size=1, max_size=40))
    seps = draw(st.lists(st.sampled_from(["", "", "", "\n", "\n\n"]), min_size=len(parts)))
    return "".join(p + s for p, s in zip(parts, seps, strict=False))


@settings(max_examples=150, deadline=None)
@given(text=prose())
@pytest.mark.parametrize("units", BACKENDS)
def test_contract_holds_on_generated_prose(units: UnitSplitter, text: str) -> None:
    check_contract(text, units, SplitConfig())
