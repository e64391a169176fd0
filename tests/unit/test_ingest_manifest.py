"""Manifest files (TOML, YAML), CLI defaults over them, and inference when both are silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.manifest import DocMeta, Manifest, ManifestError, find_manifest, load_manifest
from ingest.pipeline import build_document, doc_id_for, synonym_tagger
from retrieval.text import search_form

TOML = """
[[documents]]
file = "a.md"
title = "神的经纶"
author = "示例作者"
year = 1976
era = "Lee-post1970"
type = "message"
language = "zh"

[[documents]]
file = "sub/b.txt"
type = "outline"
"""

YAML = """
documents:
  - file: a.md
    title: The Economy of God
    year: "1985"
    language: en
"""


def test_toml_manifest(tmp_path: Path) -> None:
    (tmp_path / "manifest.toml").write_text(TOML, encoding="utf-8")
    manifest = load_manifest(find_manifest(tmp_path) or Path())
    a = manifest.for_path(tmp_path / "a.md")
    assert a == DocMeta("神的经纶", "示例作者", 1976, "Lee-post1970", "message", "zh")
    assert manifest.for_path(tmp_path / "sub" / "b.txt").type == "outline"
    assert manifest.for_path(tmp_path / "other.md").is_empty()


def test_yaml_manifest_and_cli_defaults_win(tmp_path: Path) -> None:
    (tmp_path / "manifest.yaml").write_text(YAML, encoding="utf-8")
    manifest = load_manifest(tmp_path / "manifest.yaml")
    meta = manifest.for_path(tmp_path / "a.md")
    assert (meta.title, meta.year, meta.language) == ("The Economy of God", 1985, "en")
    cli = Manifest({}, DocMeta(author="CLI", era="sample"))
    merged = manifest.merged(cli).for_path(tmp_path / "a.md")
    assert (merged.title, merged.author, merged.era) == ("The Economy of God", "CLI", "sample")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[[documents]]\nfile = 'a.md'\ntype = 'poem'\n", "type must be one of"),
        ("[[documents]]\nfile = 'a.md'\nyear = 'soon'\n", "year must be an integer"),
        ("[[documents]]\ntitle = 'x'\n", "needs `file`"),
        ("[[documents]\n", "syntax error"),
        ("[[documents]]\nfile = 'a.md'\nlanguage = 'fr'\n", "language must be zh or en"),
    ],
)
def test_bad_manifests_say_why(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "manifest.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError, match=reason) as err:
        load_manifest(path)
    assert err.value.zh


def test_inference_when_no_manifest(tmp_path: Path) -> None:
    tag = synonym_tagger([("经纶", "economy"), ("调和", "mingling")])
    md = tmp_path / "msg.md"
    md.write_text(
        "# 神人的調和\n\n## 一　意義\n\n神的經綸是神與人調和（弗一10）。\n", encoding="utf-8"
    )
    built = build_document(md, DocMeta(), max_bytes=10**6, tagger=tag, namespace="corpus")
    rec = built.record
    assert (rec.source, rec.type, rec.language) == ("神人的調和", "message", "zh")
    assert rec.doc_id == doc_id_for("神人的调和")  # Traditional and Simplified titles agree
    chunk = built.chunks[0]
    assert chunk.text.startswith("神的經綸")  # original kept for display
    assert chunk.search_text == search_form(
        "神人的調和 > 一　意義\n神的經綸是神與人調和（弗一10）。"
    )
    assert "神的经纶" in chunk.search_text
    assert set(chunk.topic_tags) == {"经纶", "调和"}
    assert chunk.scripture_refs == ("Eph.1.10",)
    assert chunk.chapter == "神人的調和 > 一　意義"
    assert chunk.ingested_at and chunk.content_hash and chunk.doc_id == rec.doc_id

    txt = tmp_path / "notes.txt"
    txt.write_text("Some English notes.\n\nThe economy of God is His plan.", encoding="utf-8")
    built = build_document(txt, DocMeta(), max_bytes=10**6, tagger=tag, namespace="corpus")
    assert (built.record.source, built.record.language) == ("notes", "en")  # the file name
    assert built.chunks[0].topic_tags == ("经纶",)
    no_title = tmp_path / "untitled.md"
    no_title.write_text("只是一段没有标题的文字。", encoding="utf-8")
    built = build_document(no_title, DocMeta(), max_bytes=10**6, tagger=tag, namespace="corpus")
    assert built.record.source == "untitled"
