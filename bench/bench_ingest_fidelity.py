"""Footnotes, title blocks and OCR'd chapters as readers meet them (issue 43).

    nice -n 10 .venv/bin/python bench/bench_ingest_fidelity.py [--label after] [--ocr] [--out F]

Reads the fixtures in tests/fixtures/layout/ (made by make_fixtures.py there) and runs the
ingest pipeline's own load → structure → chunk steps (no store, no embedder):

- one sample message with a title block (title, subtitle, author, date), six section headings,
  a quoted verse and four footnotes, as Typst, WeasyPrint, LibreOffice and xelatex set it in a
  PDF, as LibreOffice and pandoc write it to .docx and EPUB. One row per file:
  - headings: truth headings found as heading blocks;
  - byline: which of title / author / subtitle / date the document's metadata holds;
  - byline in text: chunks with a title-block line (subtitle, author, date) in their text or
    their chapter label;
  - stray marks: blocks that are only a mark (`2`) or that hold a mark glued to their text;
  - notes: truth notes that are footnote chunks of their own (findable and citable: the
    chunk holds the note's text and the sentence it annotates);
  - notes labelled: of those, chunks labelled with the verse the note cites (【…，弗1:3-14】).
- with `--ocr`: the three-page Joseph book scanned (scan-joseph.pdf) read by tesseract, its
  chapter labels against the truth (a chapter a page; the heading at one height on each).

Only APIs that existed before issue 43 are used, so the same file measures the old loaders
(`PYTHONPATH=<old checkout> python bench/bench_ingest_fidelity.py --label before`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

FIXTURES = ROOT / "tests" / "fixtures" / "layout"
_SPACE = re.compile(r"[\s\u3000]+")


def norm(text: str) -> str:
    return _SPACE.sub("", text)


def _byline(doc: Any, truth: dict[str, Any]) -> str:
    hints = getattr(doc, "hints", {}) or {}
    have = {
        "title": norm(doc.title) == norm(truth["title"]),
        "author": norm(doc.author) == norm(truth["author"]),
        "subtitle": norm(hints.get("subtitle", "")) == norm(truth["subtitle"]),
        "date": norm(hints.get("date", "")) == norm(truth["date"]),
    }
    return " ".join(k for k, ok in have.items() if ok) or "–"


def message_row(name: str, truth: dict[str, Any]) -> dict[str, object]:
    from ingest.manifest import DocMeta
    from ingest.pipeline import finish_document, prepare_document
    from ingest.structure import prose_sections

    started = time.perf_counter()
    prepared = prepare_document(FIXTURES / name, DocMeta(type="message"), max_bytes=10**9)
    built = finish_document(prepared, tagger=lambda text: (), namespace="corpus")
    seconds = time.perf_counter() - started
    doc = prepared.doc
    want = [norm(b["text"]) for b in truth["blocks"] if b["kind"] == "heading"]
    labels = {norm(part) for s in prose_sections(doc) for part in s.path}
    body = [c for c in built.chunks if c.type != "footnote"]
    byline = [norm(truth[k]) for k in ("subtitle", "author", "date")]
    leaked = sum(1 for c in body if any(b in norm(c.text + c.chapter) for b in byline))
    truth_text = norm("".join(b["text"] for b in truth["blocks"]))
    stray = 0
    for b in doc.blocks:
        text = norm(b.text)
        if re.fullmatch(r"\d{1,2}", text) or (text and text not in truth_text and b.kind == "para"):
            stray += 1
    notes = [c for c in built.chunks if c.type == "footnote"]
    found = labelled = 0
    for n in truth["notes"]:
        chunk = next((c for c in notes if norm(n["text"]) in norm(c.text)), None)
        if chunk is None:
            continue
        found += norm(n["anchor"]) in norm(chunk.text)
        labelled += bool(re.match(r"^[\u4e00-\u9fff]{1,3}\d+:\d", chunk.chapter))
    return {
        "file": name,
        "producer": truth["producer"],
        "headings": f"{len(set(want) & labels)}/{len(want)}",
        "byline": _byline(doc, truth),
        "leaked": leaked,
        "stray": stray,
        "notes": f"{found}/{len(truth['notes'])}",
        "labelled": f"{labelled}/{len(truth['notes'])}",
        "seconds": f"{seconds:.2f}",
    }


COLUMNS = [
    ("file", "file"),
    ("producer", "producer"),
    ("headings", "headings"),
    ("byline", "title block as metadata"),
    ("leaked", "chunks holding title-block lines (text or label)"),
    ("stray", "blocks not in the text (a mark, note or title-block line in them)"),
    ("notes", "notes as footnote chunks with their sentence"),
    ("labelled", "note chunks labelled by their verse"),
    ("seconds", "load + chunk s"),
]


def ocr_rows(truth: dict[str, dict[str, Any]]) -> list[str]:
    from ingest.loaders import load_document
    from ingest.loaders.base import LoadOptions
    from ingest.structure import prose_sections

    rows = ["| scan | chapters (truth) | sections read | labels | s |", "|---|---|---|---|---|"]
    for name, t in truth.items():
        if "scan_of" not in t or "chapters" not in truth[t["scan_of"]]:
            continue
        want = [norm(ch["heading"]) for ch in truth[t["scan_of"]]["chapters"]]
        started = time.perf_counter()
        doc = load_document(FIXTURES / name, options=LoadOptions(ocr="chi_sim"))
        took = time.perf_counter() - started
        labels = [" > ".join(s.path) for s in prose_sections(doc)]
        rows.append(
            f"| {name} | {' / '.join(want)} | {len(labels)} | "
            f"{' / '.join(labels) or '–'} | {took:.0f} |"
        )
    return rows


def table(rows: list[dict[str, object]]) -> list[str]:
    """`rows` as a Markdown table under COLUMNS' titles."""
    cells = [[title for _, title in COLUMNS], ["---"] * len(COLUMNS)]
    cells += [[str(r[key]) for key, _ in COLUMNS] for r in rows]
    return ["| " + " | ".join(c) + " |" for c in cells]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", default="after")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--ocr", action="store_true", help="also OCR the scans (slow)")
    args = parser.parse_args()
    truth = json.loads((FIXTURES / "truth.json").read_text(encoding="utf-8"))
    rows = [message_row(name, t) for name, t in truth.items() if "blocks" in t]
    report = [f"### {args.label}", "", *table(rows)]
    if args.ocr:
        report += ["", *ocr_rows(truth)]
    text = "\n".join(report) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
