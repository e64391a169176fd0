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
    reader = _Reader()
    for raw in _FRONT_MATTER.sub("", text).split("\n"):
        reader.feed(raw.rstrip())
    reader.flush()
    return [b for b in reader.blocks if b.text]


class _Reader:
    """Lines in, blocks out: the paragraph and the quotation being gathered, and whether a
    code fence is open (its lines are kept as they are, in the paragraph)."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.para: list[str] = []
        self.quote: list[str] = []
        self.in_fence = False

    def feed(self, line: str) -> None:
        if _FENCE.match(line):
            self.in_fence = not self.in_fence
        elif self.in_fence:
            self.para.append(line)
        elif self._heading(line):
            pass
        elif line.lstrip().startswith(">"):
            self._flush_para()
            self.quote.append(line.lstrip()[1:].lstrip())
        elif not line.strip():
            self.flush()
        else:
            if self.quote:
                self.flush()
            self.para.append(line)

    def _heading(self, line: str) -> bool:
        """An ATX heading (`# …`), or a setext underline below a one-line paragraph."""
        m = _HEADING.match(line)
        if m:
            self.flush()
            self.blocks.append(Block(strip_inline(m.group(2)).strip(), "heading", len(m.group(1))))
            return True
        if _SETEXT.match(line) and len(self.para) == 1 and not self.quote:
            title = self.para.pop()
            level = 1 if "=" in line else 2
            self.blocks.append(Block(strip_inline(title).strip(), "heading", level))
            return True
        return False

    def _flush_para(self) -> None:
        if self.para:
            self.blocks.append(Block(strip_inline("\n".join(self.para)).strip(), "para"))
            self.para.clear()

    def flush(self) -> None:
        self._flush_para()
        if self.quote:
            self.blocks.append(Block(strip_inline("\n".join(self.quote)).strip(), "quote"))
            self.quote.clear()


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
