from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest

from retrieval import text
from retrieval.synonyms import SynonymTable, SynonymTableError


def test_normalise_width_and_whitespace() -> None:
    s = "ＡＢＣ１２３　神圣，分赐：\u200b  a\t b\r\n\n\n\n c  \n d"
    assert text.normalise(s) == "ABC123 神圣，分赐： a b\n\nc\nd"


def test_normalise_keeps_chinese_punctuation() -> None:
    assert text.normalise("什么是经纶？（弗一10）！；") == "什么是经纶？（弗一10）！；"


def test_search_form_is_simplified() -> None:
    assert text.search_form("神聖的分賜與有機救恩　召會生活") == "神圣的分赐与有机救恩 召会生活"
    assert text.to_simplified("") == ""


def test_tokenize_keeps_domain_terms_whole() -> None:
    toks = text.tokenize(text.search_form("什麼是神聖的分賜與有機救恩？神圣分赐在召会生活中"))
    assert "神圣的分赐" in toks
    assert "有机救恩" in toks
    assert "神圣分赐" in toks
    assert "召会生活" in toks
    assert "什么" not in toks and "是" not in toks  # stop words
    assert "？" not in toks


def test_tokenize_english_and_osis() -> None:
    toks = text.tokenize("The Divine Dispensing, of the Triune God; see Eph.1.10 and 1Cor.12.27.")
    assert toks == ["divine", "dispensing", "triune", "god", "see", "Eph.1.10", "1Cor.12.27"]


def test_add_terms_at_runtime(tmp_path: Path) -> None:
    tok = text.Tokenizer(synonyms=False)
    before = tok("奇妙的葡萄树枝子")
    assert "葡萄树枝子" not in before
    assert tok.add_terms(["葡萄樹枝子", "葡萄树枝子", "two words"]) == 1
    assert "葡萄树枝子" in tok("奇妙的葡萄树枝子")


def test_recent_texts_are_cut_once_and_handed_out_as_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A short text's tokens are kept (a question is cut several times a search): cut once,
    each caller gets its own list, the oldest text goes past RECENT_TEXTS, and a long text
    is never kept."""
    monkeypatch.setattr(text, "RECENT_TEXTS", 2)
    tok = text.Tokenizer(synonyms=False)
    cuts: list[str] = []
    cut = tok._cut

    def counting(s: str) -> list[str]:
        cuts.append(s)
        return cut(s)

    monkeypatch.setattr(tok, "_cut", counting)
    first = tok("神圣的分赐")
    first.append("改动")
    assert tok("神圣的分赐") == first[:-1]
    assert cuts == ["神圣的分赐"]
    tok("召会的建造")
    tok("基督的身体")  # the third text pushes the first out
    tok("神圣的分赐")
    assert cuts == ["神圣的分赐", "召会的建造", "基督的身体", "神圣的分赐"]
    long = "神" * (text.RECENT_TEXT_CHARS + 1)
    tok(long)
    tok(long)
    assert cuts[-2:] == [long, long]


def test_tokenizers_are_independent(tmp_path: Path) -> None:
    a = text.Tokenizer(synonyms=False)
    b = text.Tokenizer(synonyms=False)
    a.add_terms(["橄榄树枝子"])
    assert "橄榄树枝子" in a("橄榄树枝子")
    assert "橄榄树枝子" not in b("橄榄树枝子")


def test_synonym_table_bundled() -> None:
    table = SynonymTable.load()
    assert len(table.groups) >= 35
    assert {"调和", "mingling", "互渗", "经纶", "oikonomia", "divine dispensing"} <= table.terms()
    assert table.expand(["调和"]) == {"mingling": 0.5, "互渗": 0.5, "mingle": 0.5}
    assert table.expand(["經綸"], weight=0.3)["economy"] == 0.3
    assert "经纶" not in table.expand(["经纶"])


def test_synonym_find_phrases_and_tokens() -> None:
    table = SynonymTable.load()
    q = "what is the divine dispensing in the church life? 调和"
    found = table.find(q, text.tokenize(q))
    assert {"divine dispensing", "church life", "调和"} <= set(found)
    assert "economy" not in found


def test_synonym_parse_formats_and_errors(tmp_path: Path) -> None:
    t = SynonymTable.parse("# c\n\nA\tB\nC | D | 丙  # trailing\n")
    assert t.groups == (("a", "b"), ("c", "d", "丙"))
    with pytest.raises(SynonymTableError) as e:
        SynonymTable.parse("a | b\nlonely\n")
    assert e.value.line == 2
    with pytest.raises(SynonymTableError, match=":1:"):
        SynonymTable.parse("a|b\n")
    with pytest.raises(SynonymTableError, match=":3:"):
        SynonymTable.parse("x | y\n#\na |  | b\n")
    p = tmp_path / "s.tsv"
    p.write_text("甲 | 乙\n", encoding="utf-8")
    assert SynonymTable.load(p, weight=0.25).expand(["甲"]) == {"乙": 0.25}


@pytest.mark.parametrize("cache", [b"", b"not marshal at all", marshal.dumps(([1], 2))])
def test_an_unreadable_dictionary_cache_is_rebuilt_and_cuts_the_same(
    tmp_path: Path, cache: bytes
) -> None:
    """jieba's dictionary cache is read whole (`_cached_dictionary`); an empty, truncated or
    foreign file is not an error: the dictionary is built from jieba's word list, written back,
    and text is cut exactly as with the default cache."""
    (tmp_path / "jieba.cache").write_bytes(cache)
    assert text._cached_dictionary(tmp_path) is None
    sentence = "神圣的分赐与召会生活中经纶的实际"
    rebuilt = text.Tokenizer(cache_dir=tmp_path)
    assert rebuilt.tokenize(sentence) == text.Tokenizer().tokenize(sentence)
    written = text._cached_dictionary(tmp_path)  # jieba wrote a good cache for next time
    assert written is not None and written == text._BASE[tmp_path]
    text._BASE.pop(tmp_path)  # each case builds from its own file


def test_missing_dictionary_cache_reads_as_none(tmp_path: Path) -> None:
    assert text._cached_dictionary(tmp_path / "nowhere") is None


def test_the_dictionary_is_the_same_whatever_the_string_hash_seed() -> None:
    """jieba suggests a new word's frequency from the words added before it: terms given as a
    set (the graph's labels) must be added in one order, or two processes cut differently."""
    import subprocess
    import sys

    code = (
        "from retrieval.text import Tokenizer\n"
        "t = Tokenizer(terms={'神圣分赐', '召会生活', '生命的灵', '基督身体', '属灵的生命'})\n"
        "t.warm()\n"
        "print(t.jieba.total)\n"
    )
    root = Path(__file__).resolve().parents[2]
    totals = set()
    for seed in ("0", "1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        totals.add(out.stdout.strip())
    assert len(totals) == 1, totals


def test_a_tokenizer_made_from_its_spec_cuts_the_same() -> None:
    """The reading process makes the keyword tokenizer from `Tokenizer.spec`: the same words,
    added in the same order, give the same dictionary and the same cuts."""
    import pickle

    first = text.Tokenizer(terms={"神圣的分赐", "召会生活", "生命的灵", "金灯台"})
    first.add_terms(["经历内住的基督"])
    spec = pickle.loads(pickle.dumps(first.spec()))
    again = spec.build()
    assert spec == first.spec() and hash(spec) == hash(first.spec())
    assert again.jieba.total == first.jieba.total
    sample = text.search_form("经历内住的基督，神圣的分赐在召会生活中；金灯台与生命的灵。")
    assert again.tokenize(sample) == first.tokenize(sample)
    assert "经历内住的基督" in again.tokenize(sample)
