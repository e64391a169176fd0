"""The README's checkable claims against the code and data they describe (issue 43, item 9):
numbers, key lists, defaults, commands and the files it points to. What a reader sees the
product do is tested where it happens (the tests each claim names in `CLAIMS`); what it
measures is in the benches the README links (bench/RESULTS.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.commands import standard_registry
from bot.settings import Settings
from ingest.loaders.bible import load_bible
from ingest.samples import SAMPLES_DIR
from retrieval.answer import Answer
from retrieval.graph import grow
from retrieval.scholar import PAGE_VERSES
from tests.service_fakes import RecordingBallots, RecordingNovels, RecordingScholar

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")

# Claims a reader would try, and the tests that show them true.
CLAIMS = {
    "控制台……还不能附加文件；日志写入 baibao.log": "tests/e2e/test_readers.py",
    "问年份……没有说出时，回答「职事语料没有直接论及」": "tests/e2e/test_readers.py",
    "类型:bible … 以经文回答【和合本，西1:15】": "tests/e2e/test_readers.py",
    "默认简体（照着、得着）": "tests/e2e/test_readers.py",
    "超过 30 节的经文分页显示": "tests/e2e/test_cite_pages.py",
    "作者不是概念；路径从不经过作者": "tests/unit/test_graph_authors.py",
    "标题里点名、正文中反复出现的词语整体生长": "tests/unit/test_graph_authors.py",
    "`时代:1980s` 即可筛选到它": "tests/unit/test_reader_details.py",
}


@pytest.mark.parametrize("path", sorted(set(CLAIMS.values())))
def test_the_tests_named_for_claims_exist(path: str) -> None:
    assert (ROOT / path).is_file()


def test_the_bible_counts_are_the_bundled_table_s() -> None:
    table = load_bible(SAMPLES_DIR / "cuv-1919-traditional.tsv.gz", 10**9)
    rows, empty = len(table.verses) + table.empty, table.empty
    assert f"{len(table.verses):,} 节有经文" in README
    assert f"{rows:,} rows, of which {empty} merged verses are empty" in README
    assert f"so {len(table.verses):,} verses" in README
    assert "31,102" not in README


def test_the_ask_json_keys_are_the_answer_s() -> None:
    keys = set(Answer("q", "zh", "extractive", True).as_json(""))
    listed = re.search(r"ask --json .*# \{([^}]*)\}", README)
    assert listed is not None
    assert {k.strip() for k in listed.group(1).split(",")} == keys
    cli = (ROOT / "bot" / "cli.py").read_text(encoding="utf-8")
    helped = re.search(r"print \{([^}]*)\} as JSON", cli)  # `baibao ask --help` says the same
    assert helped is not None and {k.strip() for k in helped.group(1).split(",")} == keys


def test_no_document_is_named_that_the_repository_lacks() -> None:
    assert "design card" not in README
    linked = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    named = re.findall(r"`((?:bench|docs|tests|retrieval|scripts|ingest)/[\w./-]+)`", README)
    paths = [p for p in [*linked, *named] if not p.startswith("http")]
    assert paths and all((ROOT / p).exists() for p in paths), [
        p for p in paths if not (ROOT / p).exists()
    ]


@pytest.mark.parametrize(
    ("setting", "shown"),
    [
        ("data_dir", "`DATA_DIR` | `data`"),
        ("qdrant_edge_layout", "`QDRANT_EDGE_LAYOUT` | `in-memory`"),
        ("llm_provider", "`LLM_PROVIDER` | `auto`"),
        ("embedding_provider", "`EMBEDDING_PROVIDER` | `offline`"),
        ("default_language", "`DEFAULT_LANGUAGE` | `zh`"),
        ("graph_growth", "`GRAPH_GROWTH` | `true`"),
        ("novel_round_openers", "`NOVEL_ROUND_OPENERS` | `admins`"),
    ],
)
def test_the_settings_table_shows_the_defaults(setting: str, shown: str) -> None:
    default = Settings.model_fields[setting].default
    assert shown in README
    assert str(default).lower() == shown.rsplit("`", 2)[-2].lower()


def test_numbers_the_readme_gives() -> None:
    fields = Settings.model_fields
    assert f"| `CHAT_UPLOAD_MAX_MB` | {fields['chat_upload_max_mb'].default:.0f} |" in README
    user, chat = (
        fields["rate_limit_user_per_min"].default,
        fields["rate_limit_chat_per_min"].default,
    )
    assert f"| {user}, {chat} |" in README
    weights, k = fields["fusion_weights"].default, fields["fusion_k"].default
    assert f"| `{weights}`, {k} |" in README
    proposal, vote = fields["novel_proposal_minutes"].default, fields["novel_vote_minutes"].default
    assert f"| {proposal:.0f}, {vote:.0f} |" in README
    assert f"`DEMO_BIBLE_BOOKS` (default `{fields['demo_bible_books'].default}`)" in README
    assert (
        f"至少出现 {grow.BURST_MIN} 次" in README and f"at least {grow.BURST_MIN} times" in README
    )
    assert f"超过 {PAGE_VERSES} 节" in README and f"more than {PAGE_VERSES} verses" in README


def test_every_command_in_the_table_is_registered_and_every_registered_one_listed() -> None:
    registry = standard_registry(RecordingScholar(), RecordingNovels(), RecordingBallots())
    listed = set(re.findall(r"^\| `/(\w+)", README, re.MULTILINE))
    # the registry without its optional rooms: /graph, /ingest, /sources are added by the app
    registered = {entry.name for entry in registry}
    assert registered <= listed
    assert listed - registered <= {"graph", "ingest", "sources"}
