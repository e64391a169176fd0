"""The sentences that may bear a question's answer, and where their subject is said.

A fact is often stated beside its subject rather than in the sentence that names it:

- the sentence after it points back (「…你们就知道我在父里面。」「那日就是复活的日子。」);
- an outline's sub-point says it under a point that names the subject
  (「三、三种职事合为一个新约职事」「（一）彼得开始，保罗完成，约翰修补」).

`said_in(passages)` reads each sentence with those two neighbours (`Said`). Which of them
state the fact a question asks is the fact reader's call (`Answerability.stating`);
`AnswerBearing` keeps those close in meaning to the question (the embedder's own similarity
between the question and the sentence, e5's `query:` / `passage:` forms): a paraphrased
question shares few words with the sentence that answers it, but its meaning is near that
sentence's. Only those sentences are embedded (a few, not every sentence of six passages: a
second or more on a busy machine).
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from retrieval.sentences import split_sentences

# The similarity of a question to each sentence (the embedder's query and passage forms).
SentenceScorer = Callable[[str, Sequence[str]], Awaitable[list[float]]]


@dataclass(frozen=True, slots=True)
class Said:
    """A sentence of a passage with what it stands beside: the next sentence when that one
    opens by pointing back at it, and the outline point it sits under ("" for none)."""

    sentence: str
    after: str = ""
    parent: str = ""


# Words that open a sentence by pointing back at the one before (那日, 这就是, 祂, This, It).
POINTS_BACK = re.compile(
    r"(?:那|这|此|其|祂|他|它)|(?:this|that|it|these|those|he|she|they)\b", re.I
)
# Outline markers, outermost first: 壹 → 一、 → （一） → 1.
_LEVELS = (
    re.compile(r"^[壹贰叁肆伍陆柒捌玖拾]+[　\s、]"),
    re.compile(r"^[一二三四五六七八九十]+、"),
    re.compile(r"^[（(][一二三四五六七八九十]+[）)]"),
    re.compile(r"^\d+[.．、]"),
)


def outline_level(line: str) -> int | None:
    """How deep an outline point `line` is (0 outermost), None for a line that is no point."""
    text = line.strip()
    for level, marker in enumerate(_LEVELS):
        if marker.match(text):
            return level
    return None


def said_in(passages: Sequence[str]) -> list[Said]:
    """Every non-blank sentence of `passages`, with its pointing-back follower and its outline
    parent (the nearest point above it that is less deep)."""
    out: list[Said] = []
    for text in passages:
        sentences = _sentences(text)
        points: list[tuple[int, str]] = []  # the open outline points, outermost first
        for i, sentence in enumerate(sentences):
            level = outline_level(sentence)
            parent = ""
            if level is not None:
                points = [(lv, p) for lv, p in points if lv < level]
                parent = points[-1][1] if points else ""
                points.append((level, sentence))
            nxt = sentences[i + 1] if i + 1 < len(sentences) else ""
            after = nxt if POINTS_BACK.match(nxt.strip()) else ""
            out.append(Said(sentence, after, parent))
    return out


_BARE_MARKER = re.compile(r"^\s*\d+[.．]$")


def _sentences(text: str) -> list[str]:
    """The non-blank sentences of `text`, an outline's `1.` kept with its line (the splitter
    ends a sentence at a full stop before a space)."""
    out: list[str] = []
    for sentence in split_sentences(text):
        if out and _BARE_MARKER.match(out[-1]):
            out[-1] += sentence
        elif sentence.strip():
            out.append(sentence)
    return out


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def cosine_scorer(
    embed_query: Callable[[str], Awaitable[list[float]]],
    embed_passages: Callable[[Sequence[str]], Awaitable[list[list[float]]]],
) -> SentenceScorer:
    """A `SentenceScorer` from an embedder's two methods (cosine: any model's scale)."""

    async def score(question: str, sentences: Sequence[str]) -> list[float]:
        if not sentences:
            return []
        query = await embed_query(question)
        vectors = await embed_passages(list(sentences))
        return [_cosine(query, v) for v in vectors]

    return score


# The similarity a sentence must reach to bear the answer, per embedder, read off the seen
# halves (bench/results/answerability.md, "After the fixes test3 prompted": 0.86 answers two
# unanswerable place questions, 0.90 loses an answerable one). The hash fake and models not
# listed have no scale to trust: no sentence bears an answer.
BEARING_FLOORS = {"multilingual-e5-small-q4": 0.88}


@dataclass(frozen=True, slots=True)
class AnswerBearing:
    """The sentences close in meaning to a question: at `floor` or above on the scorer's
    scale."""

    score: SentenceScorer
    floor: float

    @classmethod
    def for_embedder(cls, model_id: str, score: SentenceScorer) -> AnswerBearing | None:
        floor = BEARING_FLOORS.get(model_id)
        return cls(score, floor) if floor is not None else None

    async def close(self, question: str, said: Sequence[Said]) -> list[Said]:
        """Those of `said` close in meaning to `question` (scored by their own sentence)."""
        if not said:
            return []
        scores = await self.score(question, [s.sentence for s in said])
        return [s for s, score in zip(said, scores, strict=True) if score >= self.floor]
