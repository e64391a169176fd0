"""Both chunking backends meet the same contract on the same text."""

from __future__ import annotations

import itertools

import pytest

from novel.splitter import SplitConfig, builtin_units, langchain_units, split_text

PARA = "林远站在渡口，望着江面，心里想着师父临走前的那句话。"
TEXTS = [
    "\n\n".join(
        [PARA * 2, "“你在哪里？”他低声问道！苏晴没有回答；只是把灯笼举高了一些。" * 3] * 10
    ),
    "".join(chr(0x4E00 + (i * 7) % 997) for i in range(1700)),  # no punctuation: hard cuts
    "\n".join(f"第{i}行：风从江上吹来，吹动了船帆。" for i in range(120)),
    PARA * 3,  # shorter than one chunk
]


def check_contract(text: str, chunks: list[str], cfg: SplitConfig) -> None:
    body = text.strip()
    assert chunks and all(c.strip() for c in chunks)
    assert all(len(c) <= cfg.max_size for c in chunks)
    if len(body) <= cfg.max_size:
        assert chunks == [body]
        return
    assert all(len(c) >= cfg.min_size for c in chunks[:-1])
    rebuilt = chunks[0]
    for prev, cur in itertools.pairwise(chunks):
        m = next(
            m for m in range(cfg.overlap_max, cfg.overlap_min - 1, -1) if prev.endswith(cur[:m])
        )
        assert cfg.overlap_min <= m <= cfg.overlap_max
        assert len(cur) > m  # every chunk adds new text
        rebuilt += cur[m:]
    assert rebuilt == body


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("units", [builtin_units, langchain_units])
def test_contract(text: str, units: object) -> None:
    cfg = SplitConfig()
    chunks = split_text(text, cfg, units)  # type: ignore[arg-type]
    check_contract(text, chunks, cfg)


@pytest.mark.parametrize("units", [builtin_units, langchain_units])
def test_units_lose_nothing(units: object) -> None:
    for text in TEXTS:
        assert "".join(units(text, 50)) == text  # type: ignore[operator]


def test_empty() -> None:
    assert split_text("  \n\n ") == []
