"""PDF structure on books typeset by real producers: headings, chapter labels, running lines.

    nice -n 10 .venv/bin/python bench/bench_pdf_layout.py [--label after] [--out FILE]

Reads the fixtures in tests/fixtures/layout/ (made by make_fixtures.py there: WeasyPrint,
LibreOffice, xelatex + ctex, a two-column xelatex, an English WeasyPrint book with hyphenation)
and their truth.json, runs the ingest pipeline's own load → structure → chunk steps (no store,
no embedder), and prints one Markdown table row per PDF:

- headings found whole: truth headings that are exactly a section label (whitespace ignored);
  precision: labels that are a truth heading / all distinct labels;
- labels with body text: labels that are not a heading but hold one, or hold body text;
- paragraphs whole: truth paragraphs that come out as one paragraph block;
- chunks right: chunks whose label is the heading path of the section most of their sentences
  come from;
- running lines in chunks: chunks holding the running header or a page number (the source
  text has no digits, so any digit is one).

The script only uses APIs that existed before issue 24, so the same file measures the old
loader (`PYTHONPATH=<old checkout> python bench/bench_pdf_layout.py --label before`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

FIXTURES = ROOT / "tests" / "fixtures" / "layout"
_SPACE = re.compile(r"[\s\u3000]+")
_SENT = re.compile(r"(?<=[。！？；!?;.])")


def norm(text: str) -> str:
    from retrieval.text import to_simplified

    return to_simplified(_SPACE.sub("", text))


def sections(truth: dict[str, Any]) -> list[tuple[tuple[str, ...], list[str]]]:
    """(heading path, paragraphs) in reading order."""
    out: list[tuple[tuple[str, ...], list[str]]] = []
    for ch in truth["chapters"]:
        if ch.get("paragraphs"):
            out.append(((ch["heading"],), ch["paragraphs"]))
        for sec in ch.get("sections", []):
            out.append(((ch["heading"], sec["heading"]), sec["paragraphs"]))
    return out


def measure(name: str, truth: dict[str, Any]) -> dict[str, object]:
    from ingest.manifest import DocMeta
    from ingest.pipeline import finish_document, prepare_document
    from ingest.structure import prose_sections

    path = FIXTURES / name
    started = time.perf_counter()
    prepared = prepare_document(path, DocMeta(type="book"), max_bytes=10**9)
    built = finish_document(prepared, tagger=lambda text: (), namespace="corpus")
    seconds = time.perf_counter() - started

    secs = sections(truth)
    headings = {norm(h) for path_, _ in secs for h in path_}
    body = "".join(norm(p) for _, paras in secs for p in paras)
    labels = {norm(part) for s in prose_sections(prepared.doc) for part in s.path}
    whole = len(headings & labels)
    carrying = sum(
        1
        for lab in labels - headings
        if any(h in lab for h in headings) or (len(lab) >= 8 and lab[-8:] in body)
    )
    paras = {norm(b.text) for b in prepared.doc.blocks if b.kind == "para"}
    truth_paras = [norm(p) for _, ps in secs for p in ps]
    paras_whole = sum(1 for p in truth_paras if p in paras)

    # Where each sentence of the truth lives.
    owner: list[tuple[str, tuple[str, ...]]] = []
    for path_, ps in secs:
        for p in ps:
            owner += [(s, path_) for s in (norm(x) for x in _SENT.split(p)) if len(s) >= 4]
    running = [norm(r) for r in truth.get("running", [])]
    right = leaked = 0
    for chunk in built.chunks:
        text = norm(chunk.text)
        votes: Counter[tuple[str, ...]] = Counter()
        for s, path_ in owner:
            if s in text:
                votes[path_] += len(s)
        want = " > ".join(norm(h) for h in votes.most_common(1)[0][0]) if votes else "?"
        got = " > ".join(norm(part) for part in chunk.chapter.split(" > "))
        right += got == want
        leaked += any(r in text for r in running) or bool(re.search(r"\d", chunk.text))
    n = len(built.chunks)
    return {
        "pdf": name,
        "producer": truth["producer"],
        "headings": f"{whole}/{len(headings)}",
        "precision": f"{whole / len(labels):.2f}" if labels else "–",
        "body_in_labels": carrying,
        "paras_whole": f"{paras_whole}/{len(truth_paras)}",
        "chunks_right": f"{right}/{n} ({100 * right / n:.0f} %)" if n else "0",
        "running_in_chunks": leaked,
        "seconds": f"{seconds:.2f}",
    }


COLUMNS = [
    ("pdf", "PDF"),
    ("producer", "producer"),
    ("headings", "headings found whole"),
    ("precision", "heading precision"),
    ("body_in_labels", "labels with body text"),
    ("paras_whole", "paragraphs whole"),
    ("chunks_right", "chunks with the right chapter"),
    ("running_in_chunks", "chunks with running lines / page numbers"),
    ("seconds", "load + chunk s"),
]


def extractors(truth: dict[str, dict[str, Any]]) -> str:
    """PDFium (pypdfium2) vs pdfminer.six: characters of the truth read back, and time."""
    import pypdfium2
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams

    def chars(text: str) -> Counter[str]:
        return Counter(c for c in text if not c.isspace())

    def pdfium_text(path: Path) -> str:
        pdf = pypdfium2.PdfDocument(str(path))
        return "".join(page.get_textpage().get_text_range() for page in pdf)

    def pdfminer_text(path: Path) -> str:  # layout objects, as a layout reader would use them
        return "".join(
            box.get_text()
            for page in extract_pages(str(path), laparams=LAParams())
            for box in page
            if hasattr(box, "get_text")
        )

    rows = [
        "| PDF | PDFium chars | PDFium s | pdfminer.six chars | pdfminer.six s |",
        "|---|---|---|---|---|",
    ]
    for name, t in truth.items():
        if not (name.endswith(".pdf") and "chapters" in t):
            continue
        want = chars(
            "".join(h for path_, _ in sections(t) for h in path_)
            + "".join(p for _, ps in sections(t) for p in ps)
        )
        cells = [name]
        for read in (pdfium_text, pdfminer_text):
            started = time.perf_counter()
            got = chars(read(FIXTURES / name))
            took = time.perf_counter() - started
            cells += [f"{sum((want & got).values()) / sum(want.values()):.4f}", f"{took:.2f}"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", default="after")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--extractors", action="store_true", help="PDFium vs pdfminer.six")
    args = parser.parse_args()
    truth = json.loads((FIXTURES / "truth.json").read_text(encoding="utf-8"))
    if args.extractors:
        print(extractors(truth))
        return
    rows = [
        measure(name, t) for name, t in truth.items() if name.endswith(".pdf") and "chapters" in t
    ]
    lines = [
        f"### {args.label}",
        "",
        "| " + " | ".join(title for _, title in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(str(r[key]) for key, _ in COLUMNS) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
