"""Which library reads Word outlines and footnotes: python-docx (the loader) vs mammoth vs
docx2python, on the .docx fixtures LibreOffice and pandoc wrote (tests/fixtures/layout).

    .venv/bin/python bench/bench_docx.py     # mammoth and docx2python: pip install them first

Per file: outline points whose list level is right (against the outline they were made from),
points shown with the number Word shows (壹　/ 一、/ （一）/ 1. …), footnotes read.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "fixtures" / "layout"
_ZH_MARKER = re.compile(
    r"^(?:[壹贰叁肆]\u3000|[一二三四五六七八九十]+、|（[一二三四五六七八九十]+）)"
)


def ours(path: Path) -> tuple[list[tuple[int, str]], int]:
    from ingest.loaders import load_document

    doc = load_document(path)
    points = [(b.level, b.text) for b in doc.blocks if b.kind == "point"]
    return points, len(doc.notes)


def mammoth_points(path: Path) -> tuple[list[tuple[int, str]], int]:
    from html.parser import HTMLParser

    import mammoth

    with path.open("rb") as fh:
        html = mammoth.convert_to_html(fh).value

    class Walk(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.depth = 0
            self.points: list[tuple[int, str]] = []
            self.notes = 0
            self.open_li = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag in ("ol", "ul"):
                self.depth += 1
            elif tag == "li":
                if any(k == "id" and (v or "").startswith("footnote") for k, v in attrs):
                    self.notes += 1
                else:
                    self.points.append((self.depth, ""))
                    self.open_li = True

        def handle_endtag(self, tag: str) -> None:
            if tag in ("ol", "ul"):
                self.depth -= 1
            self.open_li = False

        def handle_data(self, data: str) -> None:
            if self.open_li and self.points:
                level, text = self.points[-1]
                self.points[-1] = (level, text + data)

    walk = Walk()
    walk.feed(html)
    return walk.points, walk.notes


def docx2python_points(path: Path) -> tuple[list[tuple[int, str]], int]:
    from docx2python import docx2python

    with docx2python(str(path)) as d:
        lines = [ln for ln in d.text.split("\n") if ln.strip()]
        notes = sum(1 for n in str(d.footnotes).split("footnote") if ")\\t" in n[:6])
    points = []
    for ln in lines:
        m = re.match(r"^(\t*)(\S+)\t+(.*)$", ln)
        if m:
            points.append((len(m.group(1)) + 1, f"{m.group(2)} {m.group(3)}"))
    return points, notes


def main() -> None:
    truth = json.loads((FIXTURES / "truth.json").read_text(encoding="utf-8"))
    rows = [
        "| file | library | points at the right level | numbers as Word shows them | footnotes |",
        "|---|---|---|---|---|",
    ]
    for name in ("outline-libreoffice.docx", "outline-pandoc.docx", "message-notes-pandoc.docx"):
        t = truth[name]
        want = [tuple(p) for p in t.get("points", [])]
        for label, read in (
            ("python-docx (ours)", ours),
            ("mammoth", mammoth_points),
            ("docx2python", docx2python_points),
        ):
            try:
                points, notes = read(FIXTURES / name)
            except ImportError:
                rows.append(f"| {name} | {label} | not installed | | |")
                continue
            right = (
                sum(1 for (lv, _), (wl, _) in zip(points, want, strict=False) if lv == wl)
                if want
                else 0
            )
            shown = sum(
                1
                for _, text in points
                if _ZH_MARKER.match(text) or re.match(r"^\d+\. |^[a-z]\. ", text)
            )
            level = f"{right}/{len(want)}" if want else "–"
            marks = f"{shown}/{len(points)}" if points else "–"
            rows.append(
                f"| {name} | {label} | {level} | {marks} | {notes}/{len(t.get('notes', []))} |"
            )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
