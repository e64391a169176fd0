"""Markdown: `#` headings give chapter structure; `>` lines are quotations (verse text in
footnote files); paragraphs are separated by blank lines. Inline markup is stripped."""

from __future__ import annotations

import re
from pathlib import Path

from ingest.loaders.base import Block, Document, guess_language
from ingest.loaders.txt import read_text_file

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE = [
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),
    (re.compile(r"(\*\*|__)(.+?)\1"), r"\2"),
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"\1"),
    (re.compile(r"`([^`]+)`"), r"\1"),
    (re.compile(r"<[^>\n]+>"), ""),
]
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)


def strip_inline(text: str) -> str:
    for pattern, repl in _INLINE:
        text = pattern.sub(repl, text)
    return text


def parse_markdown(text: str) -> list[Block]:
    text = _FRONT_MATTER.sub("", text)
    blocks: list[Block] = []
    para: list[str] = []
    quote: list[str] = []

    def flush() -> None:
        if para:
            blocks.append(Block(strip_inline("\n".join(para)).strip(), "para"))
            para.clear()
        if quote:
            blocks.append(Block(strip_inline("\n".join(quote)).strip(), "quote"))
            quote.clear()

    in_fence = False
    for raw in text.split("\n"):
        line = raw.rstrip()
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            para.append(line)
            continue
        m = _HEADING.match(line)
        if m:
            flush()
            blocks.append(Block(strip_inline(m.group(2)).strip(), "heading", len(m.group(1))))
            continue
        if _SETEXT.match(line) and len(para) == 1 and not quote:
            title = para.pop()
            blocks.append(Block(strip_inline(title).strip(), "heading", 1 if "=" in line else 2))
            continue
        if line.lstrip().startswith(">"):
            if para:
                blocks.append(Block(strip_inline("\n".join(para)).strip(), "para"))
                para.clear()
            quote.append(line.lstrip()[1:].lstrip())
            continue
        if not line.strip():
            flush()
            continue
        if quote:
            flush()
        para.append(line)
    flush()
    return [b for b in blocks if b.text]


def load_md(path: Path, max_bytes: int) -> Document:
    text, enc = read_text_file(path, max_bytes)
    blocks = parse_markdown(text)
    title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    return Document(
        path=path,
        format="md",
        blocks=blocks,
        title=title,
        language=guess_language(text),
        hints={"encoding": enc},
    )
