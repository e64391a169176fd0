"""`baibao ingest` as one types it: the OCR forms the README and the refusals give, the document
list, and what `/ingest` says it takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from bot.cli import _parser
from bot.commands.corpus import corpus_commands
from bot.registry import Command, Group
from ingest.cli import format_table
from ingest.loaders.ocr import DEFAULT_LANGUAGES
from ingest.loaders.pdf import ocr_command
from retrieval.index import DocumentRecord


@pytest.mark.parametrize(
    ("argv", "languages", "files"),
    [
        (["--ocr", "扫描本.pdf"], DEFAULT_LANGUAGES, ["扫描本.pdf"]),  # the refusal's form
        (["扫描本.pdf", "--ocr"], DEFAULT_LANGUAGES, ["扫描本.pdf"]),
        (["--ocr=chi_sim", "扫描本.pdf"], "chi_sim", ["扫描本.pdf"]),
        (["--ocr", "chi_tra", "扫描本.pdf"], "chi_tra", ["扫描本.pdf"]),
        (["扫描本.pdf", "--ocr", "chi_tra"], "chi_tra", ["扫描本.pdf"]),
        (["--ocr", "chi_sim+eng", "a.pdf", "b.pdf"], "chi_sim+eng", ["a.pdf", "b.pdf"]),
        (["--ocr", "a.pdf", "b.pdf"], DEFAULT_LANGUAGES, ["a.pdf", "b.pdf"]),
        (["--ocr", "书库/"], DEFAULT_LANGUAGES, ["书库"]),
        (["a.pdf"], None, ["a.pdf"]),
    ],
)
def test_every_documented_ocr_form_reads_the_file(
    argv: list[str], languages: str | None, files: list[str]
) -> None:
    args = _parser().parse_args(["ingest", *argv])
    assert args.ocr == languages
    assert [*args.ocr_files, *args.paths] == [Path(f) for f in files]


def test_a_file_named_like_a_language_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "eng").write_bytes(b"%PDF-1.4")
    args = _parser().parse_args(["ingest", "--ocr", "eng"])
    assert args.ocr == DEFAULT_LANGUAGES and args.ocr_files == [Path("eng")]


def test_the_suggested_command_names_the_file_as_a_shell_takes_it() -> None:
    assert ocr_command("扫描本.pdf") == "baibao ingest --ocr 扫描本.pdf"
    assert ocr_command("my scan (1).pdf") == "baibao ingest --ocr 'my scan (1).pdf'"


def _record(source: str, doc_type: str, chunks: int, path: str = "") -> DocumentRecord:
    return DocumentRecord(
        doc_id=f"{source}-{chunks}-{len(path)}",
        source=source,
        content_hash="h",
        type=doc_type,
        path=path,
        chunk_count=chunks,
        ingested_at="2025-01-01T00:00:00+00:00",
    )


def test_the_list_shows_a_bible_table_once() -> None:
    bible = "/data/cuv-1919-traditional.tsv.gz"
    books = [_record("和合本（1919）", "bible", n, bible) for n in (155, 879, 95)]
    books += [_record("和合本（1919）", "bible", 0, bible) for _ in range(63)]
    table = format_table([_record("神的经纶", "message", 12, "/in/神的经纶.md"), *books])
    assert table.count("和合本（1919）") == 1
    row = next(line for line in table.splitlines() if "和合本" in line)
    assert "3 卷嵌入，另 63 卷仅经文表" in row and " 1129 " in row
    assert "神的经纶" in table


def test_ingest_names_only_the_formats_it_takes() -> None:
    """A .doc upload is taken so that it is told how to convert it; it is not a format."""
    [group] = [c for c in corpus_commands(cast(Any, None), max_bytes=1) if c.name == "ingest"]
    assert isinstance(group, Group)
    add = next(c for c in group.children if isinstance(c, Command) and c.help.name == "add")
    param = next(p for p in add.params if p.kind == "file")
    assert param.formats() == "PDF / DOCX / EPUB / TXT / MD / MARKDOWN"
    assert param.accepts("旧稿.doc") and param.accepts("book.pdf") and not param.accepts("a.exe")
