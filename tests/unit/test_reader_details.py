"""The smaller things of issue 43 (item 10) and the Simplified CUV (item 9), each on its own:
brackets the console adds to a note, blueprint rules in one line, the CUV's particle 著, the
sample corpus's eras, producers in /sources."""

from __future__ import annotations

import tomllib

import pytest

from bot.commands.corpus import _sources_reply
from bot.render.console import render
from bot.reply import Block, Reply
from ingest.manifest import infer_era
from ingest.samples import SAMPLES_DIR
from novel.blueprint import default_blueprint, join_clauses, render_summary
from retrieval.index import DocumentRecord
from retrieval.normal_form import bible_in_script


@pytest.mark.parametrize(
    ("note", "shown"),
    [
        ("（第 1 版）", "（第 1 版）"),  # bracketed already: not again
        ("第 1/6 页（共 176 节）", "（第 1/6 页（共 176 节））"),  # a bracket inside: wrapped once
        ("（甲）乙（丙）", "（（甲）乙（丙））"),  # two brackets, not one around everything
        ("第 1/6 页", "（第 1/6 页）"),
        ("", "（）"),
    ],
)
def test_the_console_brackets_a_note_once(note: str, shown: str) -> None:
    assert render(Reply(blocks=(Block(note, "note"),), lang="zh")) == shown


def test_english_notes_too() -> None:
    assert render(Reply(blocks=(Block("(version 2)", "note"),), lang="en"), "en") == "(version 2)"
    assert render(Reply(blocks=(Block("version 2", "note"),), lang="en"), "en") == "(version 2)"


def test_blueprint_rules_end_once() -> None:
    rules = ["受伤会留下后果。", "青岚江贯穿全境", "渡口不设守卫", "夜里不行船！"]
    assert join_clauses(rules) == "受伤会留下后果。青岚江贯穿全境；渡口不设守卫；夜里不行船！"
    assert join_clauses(["Wounds leave marks.", "rivers run east", ""], True) == (
        "Wounds leave marks. rivers run east"
    )
    assert join_clauses([]) == ""
    summary = "\n".join(render_summary(default_blueprint(), "zh"))
    assert "。；" not in summary and "；；" not in summary


@pytest.mark.parametrize(
    ("stored", "simplified"),
    [
        ("照著他旨意所預定的", "照着他旨意所预定的"),
        ("叫他的榮耀…可以得著稱讚", "叫他的荣耀…可以得着称赞"),
        ("按著名叫他們", "按着名叫他们"),  # by name: the particle
        ("大衛的名極其著名", "大卫的名极其著名"),  # famous: kept
    ],
)
def test_the_cuv_particle_reads_as_simplified_chinese_writes_it(
    stored: str, simplified: str
) -> None:
    assert bible_in_script(stored, "simplified") == simplified
    assert bible_in_script(stored, "traditional") == stored


def test_sample_eras_are_the_decades_of_their_years() -> None:
    """So `时代:1980s`, the README's example, finds the samples of the 1980s."""
    manifest = tomllib.loads((SAMPLES_DIR / "manifest.toml").read_text(encoding="utf-8"))
    documents = manifest["documents"]
    assert documents and all(d["era"] == infer_era(d["year"]) for d in documents)
    assert "1980s" in {d["era"] for d in documents}


def test_sources_lists_no_producer_as_an_author() -> None:
    """A record stored before producers were told apart still lists no python-docx."""
    records = [
        DocumentRecord("d1", "祭坛与基督", "h1", author="python-docx", type="message"),
        DocumentRecord("d2", "神的经纶", "h2", author="作者甲", type="book"),
    ]
    text = _sources_reply("zh", records, []).plain()
    assert "python-docx" not in text and "作者甲" in text
