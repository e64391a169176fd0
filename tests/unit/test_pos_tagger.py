"""The part-of-speech tagger graph growth uses (`Tokenizer.tag`): jieba's `POSTokenizer` with
its HMM computed by `retrieval.pos_viterbi` (numpy). It must give exactly what jieba's own
tagger gives — same words, same tags — on real and random Chinese, and the Viterbi the same
route and the same probability, bit for bit (issue 40: growth's CPU, identical output)."""

from __future__ import annotations

import gzip
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval import text
from retrieval.pos_viterbi import PosViterbi, Route

SAMPLES = Path(text.__file__).parents[1] / "ingest" / "samples"
SEED = 20261205
PUNCTUATION = "，。、；：！？“”‘’（）《》——…· \n"


@pytest.fixture(scope="module")
def tokenizer() -> text.Tokenizer:
    tok = text.Tokenizer()
    tok.warm()
    return tok


@pytest.fixture(scope="module")
def jieba_tagger(tokenizer: text.Tokenizer) -> Any:
    """jieba's own tagger over the same dictionary: the reference."""
    import jieba.posseg

    return jieba.posseg.POSTokenizer(tokenizer.jieba)


@pytest.fixture(scope="module")
def verses() -> list[str]:
    with gzip.open(SAMPLES / "cuv-1919-traditional.tsv.gz", "rt", encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t")[3] for line in f][1:]


def _tables() -> tuple[Any, Any, Any, Any]:
    import jieba.posseg as posseg

    return posseg.char_state_tab_P, posseg.start_P, posseg.trans_P, posseg.emit_P


def _random_texts(rng: random.Random, chars: str, n: int, longest: int) -> Iterator[str]:
    for _ in range(n):
        yield "".join(rng.choice(chars) for _ in range(rng.randint(1, longest)))


def _same_tags(tokenizer: text.Tokenizer, reference: Any, texts: list[str], seed: int) -> None:
    for s in texts:
        expected = [(p.word, p.flag) for p in reference.cut(s)]
        assert tokenizer.tag(s) == expected, f"seed {seed}: {s!r}"


def test_tags_the_samples_and_the_cuv_as_jieba_does(
    tokenizer: text.Tokenizer, jieba_tagger: Any, verses: list[str]
) -> None:
    """Every paragraph of the bundled samples, and CUV verses (a seeded sample) in their
    search form, alone and strung into chunks of ~400 characters as growth tags them, and a
    few in Traditional (which jieba's dictionary mostly lacks: long runs for the HMM, slow
    for jieba's own)."""
    paragraphs = [
        p
        for path in sorted(SAMPLES.glob("*.md")) + sorted(SAMPLES.glob("*.txt"))
        for p in path.read_text("utf-8").split("\n\n")
        if p.strip()
    ]
    rng = random.Random(SEED)
    picked = [text.search_form(v) for v in rng.sample(verses, 1000)]
    chunks = ["".join(picked[i : i + 16]) for i in range(0, 320, 16)]
    texts = paragraphs + picked + chunks + rng.sample(verses, 12)
    assert len(texts) > 1200
    _same_tags(tokenizer, jieba_tagger, texts, SEED)


def test_tags_random_chinese_as_jieba_does(
    tokenizer: text.Tokenizer, jieba_tagger: Any, verses: list[str]
) -> None:
    """Seeded random strings of the CUV's characters (common and rare, Traditional and
    Simplified), punctuation, digits, Latin letters and characters outside the HMM's table,
    whose every state is allowed."""
    seed = random.randrange(1 << 32)  # the run's seed (pytest-randomly): replayable
    print(f"seed {seed}")
    rng = random.Random(seed)
    common = "".join(sorted({c for v in verses[:3000] for c in v if "\u4e00" <= c <= "\u9fff"}))
    simplified = "".join(sorted({c for c in text.to_simplified(common)}))
    outside = "\u3400\u3401\u4dae\u9fa5\u9fcc\U00020000"
    texts = list(_random_texts(rng, simplified + PUNCTUATION + "0123456789ab", 1200, 30))
    texts += list(_random_texts(rng, common + outside, 100, 8))  # runs of unknown characters
    _same_tags(tokenizer, jieba_tagger, texts, seed)


def test_the_viterbi_is_jiebas_bit_for_bit(verses: list[str]) -> None:
    """The route and its log-probability (the same double) for runs of every length, and of
    characters the table does not know."""
    from jieba.posseg.viterbi import viterbi

    tables = _tables()
    hmm = PosViterbi(*tables, fallback=lambda s: viterbi(s, *tables))
    seed = random.randrange(1 << 32)  # the run's seed (pytest-randomly): replayable
    print(f"seed {seed}")
    rng = random.Random(seed)
    chars = "".join(sorted({c for v in verses[:2000] for c in v if "\u4e00" <= c <= "\u9fff"}))
    for run in _random_texts(rng, chars + "\u3400\u4dae", 300, 8):
        prob, route = viterbi(run, *tables)
        got = hmm.route(run)
        assert got[1] == route, f"seed {seed}: {run!r}"
        assert math.copysign(1, got[0]) == math.copysign(1, prob) and got[0] == prob, (
            f"seed {seed}: {run!r}"
        )


def test_equal_probabilities_take_the_largest_state_as_pythons_max_does() -> None:
    """Two states with the same probability at every step: jieba's `max` over (prob, state)
    takes the larger state, so must this."""
    from jieba.posseg.viterbi import viterbi

    a, b, c = ("B", "n"), ("E", "n"), ("S", "v")
    start = {a: -1.0, b: -1.0, c: -1.0}
    trans = {a: {b: -0.5, c: -0.5}, b: {a: -0.5, c: -0.5}, c: {a: -0.5, b: -0.5}}
    emit = {a: {"x": -2.0}, b: {"x": -2.0}, c: {"x": -2.0}}
    tables = ({}, start, trans, emit)
    hmm = PosViterbi(*tables, fallback=lambda s: viterbi(s, *tables))
    for run in ("x", "xx", "xxx", "xyx"):
        assert hmm.route(run) == viterbi(run, *tables)


def test_where_jiebas_viterbi_fails_the_fallback_fails_the_same_way() -> None:
    """A state leading nowhere before a character: jieba's `max` of nothing raises; the
    vectorised pass hands the text to jieba's own (its fallback) instead of guessing."""
    from jieba.posseg.viterbi import viterbi

    a, dead = ("B", "n"), ("S", "w")
    tables = ({"x": (dead,)}, {a: -1.0, dead: -1.0}, {a: {a: -0.5}, dead: {}}, {a: {}, dead: {}})
    calls: list[str] = []

    def fallback(run: str) -> Route:
        calls.append(run)
        return viterbi(run, *tables)  # type: ignore[no-any-return]

    hmm = PosViterbi(*tables, fallback=fallback)
    with pytest.raises(ValueError):
        viterbi("xy", *tables)
    with pytest.raises(ValueError):
        hmm.route("xy")
    assert calls == ["xy"]
    assert hmm.route("x") == viterbi("x", *tables)


def test_the_hmm_runs_kept_give_the_same_tags(tokenizer: text.Tokenizer) -> None:
    """A run of unplaced characters tagged again comes from the kept runs, with the same
    words and tags, and fresh pairs (jieba's are mutable)."""
    s = "亚兰人哈玛的王陀乌听见大卫杀败哈大底谢的全军"
    first = tokenizer.tag(s)
    cut = text._pos_tagger_class()(tokenizer.jieba).cut
    pairs = list(cut(s)), list(cut(s))
    assert tokenizer.tag(s) == first == [(p.word, p.flag) for p in pairs[0]]
    assert all(p is not q for p, q in zip(*pairs, strict=True))


def test_the_main_dictionarys_tags_are_jiebas(tokenizer: text.Tokenizer, jieba_tagger: Any) -> None:
    """Taggers share one parse of the main dictionary's tags: jieba's own."""
    ours = text._pos_tagger_class()(tokenizer.jieba)
    assert ours.word_tag_tab == jieba_tagger.word_tag_tab
    assert ours.word_tag_tab is not text._pos_tagger_class()(tokenizer.jieba).word_tag_tab
