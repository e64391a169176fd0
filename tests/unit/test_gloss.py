"""The English → Chinese gloss (CC-CEDICT read backwards) and the search's gloss ranking."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from retrieval.fakes import HashEmbedder
from retrieval.gloss import (
    Gloss,
    bundled_index,
    english_label,
    lemmas,
    parse_cedict,
    parse_english_labels,
)
from retrieval.index import DocumentRecord, Indexer
from retrieval.keyword import Bm25Encoder
from retrieval.search import GLOSS_WEIGHT, HybridSearch
from retrieval.store.edge import EdgeStore
from retrieval.text import search_form
from retrieval.types import Chunk, chunk_id, content_hash

# A few CC-CEDICT lines (format: traditional simplified [pinyin] /sense/sense/).
CEDICT = """\
# CC-CEDICT fixture
牧人 牧人 [mu4 ren2] /shepherd/herdsman/
牧羊人 牧羊人 [mu4 yang2 ren2] /shepherd/
羊 羊 [yang2] /sheep/goat/CL:隻|只[zhi1]/
說 说 [shuo1] /to speak/to talk/to say/
講 讲 [jiang3] /to speak/to explain/
光線 光线 [guang1 xian4] /light ray/
光 光 [guang1] /light/ray/bare/
王 王 [wang2] /king or monarch/surname Wang/king/
國王 国王 [guo2 wang2] /king/CL:個|个[ge4]/
哭 哭 [ku1] /to cry/to weep/
坐 坐 [zuo4] /to sit/to take a seat/
年 年 [nian2] /year/CL:個|个[ge4]/
歲月 岁月 [sui4 yue4] /years/time/
T恤 T恤 [T xu4] /T-shirt/
丼 丼 [jing3] /old variant of 井[jing3]/
"""
FREQ = {"牧人": 4.0, "牧羊人": 1.0, "羊": 5.0, "说": 50.0, "讲": 10.0, "光": 8.0, "王": 6.0}
FREQ |= {"国王": 2.0, "哭": 3.0, "坐": 3.0, "年": 40.0, "岁月": 5.0}


def freq(word: str) -> float:
    return FREQ.get(word, 0.0)


def test_reverse_index_keeps_one_word_senses() -> None:
    index = parse_cedict(CEDICT.splitlines())
    assert index["shepherd"] == ["牧人", "牧羊人"]
    assert index["speak"] == ["说", "讲"]  # "to speak"
    assert index["king"] == ["王", "国王"]  # "king or monarch" and "surname Wang" are not one word
    assert "wang" not in index and "ray" in index and "light" in index
    assert "光线" not in index["light"]  # "light ray": two words
    assert "t-shirt" not in index  # a headword with Latin letters
    assert "井" not in str(index) and "variant" not in index


@pytest.mark.parametrize(
    ("word", "lemma"),
    [("speaketh", "speak"), ("sitteth", "sit"), ("crieth", "cry"), ("spake", "speak")],
)
def test_lemmas_reach_the_dictionary_form(word: str, lemma: str) -> None:
    assert lemma in lemmas(word)


def test_renderings_commonest_first_without_stop_words() -> None:
    gloss = Gloss(parse_cedict(CEDICT.splitlines()), freq, max_renderings=1)
    assert gloss.renderings("The shepherd speaketh unto the king; thou sittest.") == {
        "shepherd": ("牧人",),
        "speaketh": ("说",),
        "king": ("王",),
        "sittest": ("坐",),
    }
    wide = Gloss(parse_cedict(CEDICT.splitlines()), freq)
    assert wide.word("shepherd") == ("牧人", "牧羊人")
    # A plural reads its singular too: `years` is 岁月 in the dictionary, `year` 年.
    assert wide.word("Years") == ("年", "岁月")
    assert wide.renderings("unto thee, O thou") == {}


def test_headwords_general_chinese_does_not_know_are_left_out() -> None:
    gloss = Gloss({"light": ["光线", "光"]}, freq)
    assert gloss.word("light") == ("光",)


def test_dictionary_is_read_once_and_only_when_used() -> None:
    reads: list[int] = []

    def source() -> dict[str, list[str]]:
        reads.append(1)
        return parse_cedict(CEDICT.splitlines())

    gloss = Gloss(source, freq)
    assert reads == []
    gloss.renderings("shepherd")
    gloss.renderings("the king weepeth")
    assert reads == [1]


def test_bundled_dictionary_ships_with_the_package() -> None:
    index = bundled_index()
    assert "牧人" in index["shepherd"] and "以色列" in index["israel"]


DOCS = {
    "ps23": ("诗篇", "耶和华是我的牧人，我必不至缺乏。", ("Ps.23.1",)),
    "ps3": ("诗篇", "耶和华啊，我的敌人何其加增。", ("Ps.3.1",)),
    "gen1": ("创世记", "起初神创造天地。", ("Gen.1.1",)),
}


@pytest.fixture
async def search(tmp_path: Path) -> AsyncIterator[HybridSearch]:
    store = await EdgeStore.open(tmp_path / "qdrant", 64)
    embedder = HashEmbedder(64)
    encoder = Bm25Encoder(avgdl=12)
    try:
        async with Indexer(tmp_path / "db.sqlite3", store, embedder, encoder, None) as ix:
            for doc_id, (source, text, refs) in DOCS.items():
                st = search_form(text)
                chunk = Chunk(
                    id=chunk_id("corpus", doc_id, 0, content_hash(st)),
                    text=text,
                    search_text=st,
                    doc_id=doc_id,
                    source=source,
                    type="bible",
                    position=0,
                    language="zh",
                    scripture_refs=refs,
                )
                await ix.replace_document(
                    DocumentRecord(doc_id, source, content_hash(text)), [chunk]
                )
            gloss = Gloss(parse_cedict(CEDICT.splitlines()), freq)
            yield HybridSearch(
                store, embedder, encoder, None, None, (0.5, 0.3, 0.2), 10, gloss=gloss
            )
    finally:
        await store.close()


async def test_an_english_question_ranks_the_chinese_verse_that_says_it(
    search: HybridSearch,
) -> None:
    found = await search.candidates("The LORD is my shepherd")
    assert found.evidence.glossed and found.evidence.cross_script
    ranked = found.per_track["gloss"].ranked
    assert ranked[0].chunk.doc_id == "ps23" and ranked[0].score > ranked[1].score
    # Every dense candidate, re-ordered; nothing new.
    dense = found.per_track["dense"].ranked
    assert {s.chunk.id for s in ranked} == {s.chunk.id for s in dense}
    weights = search.track_weights(found.evidence)
    assert weights["gloss"] == pytest.approx(0.5 * GLOSS_WEIGHT)
    result = search.fuse(found, limit=3)
    assert result.hits[0].chunk.doc_id == "ps23" and "gloss" in result.hits[0].ranks


async def test_a_chinese_question_or_one_track_is_not_glossed(search: HybridSearch) -> None:
    found = await search.candidates("牧人是谁？")
    assert "gloss" not in found.per_track and not found.evidence.glossed
    alone = await search.candidates("The LORD is my shepherd", tracks=("dense",))
    assert "gloss" not in alone.per_track


async def test_without_the_cross_script_rule_the_gloss_ranking_does_not_count(
    search: HybridSearch,
) -> None:
    found = await search.candidates("The LORD is my shepherd")
    same_script = dataclasses.replace(found.evidence, cross_script=False)
    assert search.track_weights(same_script)["gloss"] == 0.0


def test_english_labels_read_the_dictionary_forwards() -> None:
    lines = [
        "# CC-CEDICT",
        "帳幕 帐幕 [zhang4 mu4] /tent/",
        "教會 教会 [jiao1 hui4] /to show/to teach/",
        "教會 教会 [jiao4 hui4] /Christian church/",
        "變化 变化 [bian4 hua4] /(intransitive) to change; to vary/change; variation/CL:個|个[ge4]/",
        "重生 重生 [chong2 sheng1] /to be reborn/",
        "基督 基督 [Ji1 du1] /Christ (abbr. for 基利斯督[Ji1 li4 si1 du1])/",
        "經綸 经纶 [jing1 lun2] /see 經綸|经纶/a long definition of more than four words here/",
        "某 某 [mou3] /variant of 某|某/",
    ]
    labels = parse_english_labels(lines)
    assert labels == {
        "帐幕": "tent",
        "教会": "Christian church",  # a thing's name before a verb's, across entries
        "变化": "change",
        "重生": "be reborn",  # only verbs: the first, without its "to"
        "基督": "Christ",
    }
    assert english_label("帐幕") == "tent"  # the bundled dictionary
    assert english_label("甲乙丙丁") is None
