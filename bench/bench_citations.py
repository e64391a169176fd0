"""Citation verification benchmark: valid, fabricated-source and misquoted model replies.

Scripted model replies (ScriptedLLM) over fixed sets of retrieved passages. Every generated
citation carries its ground truth, so the numbers are exact:

- validity of the citations the reply *shows* (must be 100%),
- how many fabricated-source and misquoted citations the verifier caught,
- how many genuine citations it wrongly removed (false removals),
- verifier time per citation.

    .venv/bin/python bench/bench_citations.py [--write bench/results/citations.md]

All passage text is original prose written for this benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from retrieval.answer import Passage, build_prompt, quote_found, verify
from retrieval.llm.scripted import ScriptedLLM
from retrieval.ports import LLMResponse, ModelCitation, TextSegment
from retrieval.types import Chunk, Hit

# (source, chapter, text) — four passages per retrieved set.
SETS: list[list[tuple[str, str, str]]] = [
    [
        (
            "生命的供应",
            "一　泉源",
            "泉源在山上，活水顺着沟渠流到田里。父好比泉源，子好比沟渠，灵好比渗进田里的水。",
        ),
        ("生命的供应", "二　路线", "爱是源头，恩是流出，交通是传输。这三者乃是一道流的三个阶段。"),
        (
            "里面的人",
            "三　加力",
            "里面的人得着加力，基督就能安家在心里。心包括心思、情感、意志和良心。",
        ),
        ("召会的建造", "一　肢体", "每一个肢体都有功用。身体的长大，在于各部分照着度量尽功用。"),
    ],
    [
        (
            "经纶的中心",
            "一　计划",
            "神有一个永远的计划，要把万有在基督里归于一。这计划的中心是基督，目标是召会。",
        ),
        (
            "经纶的中心",
            "二　管家",
            "管家职分就是把主人的丰富分给全家。使徒以供应生命为职事的本质。",
        ),
        (
            "国度的操练",
            "四　管治",
            "国度乃是神行使权柄的范围。信徒今天在灵里受主管治，为着将来同主作王。",
        ),
        (
            "新人的生活",
            "二　脱去与穿上",
            "脱去旧人，穿上新人，是在心思的灵里更新。这不是外面的改良，乃是里面的变化。",
        ),
    ],
    [
        (
            "The Flow of Life",
            "Chapter 2",
            "Love is the source, grace is the flow, and fellowship is the transmission. The three are stages of one stream.",
        ),
        (
            "The Flow of Life",
            "Chapter 3",
            "Life grows by feeding, not by teaching alone. A believer who is fed daily will mature in a normal way.",
        ),
        (
            "Spirit and Body",
            "Chapter 1",
            "The body is built up when every member functions. Growth in life and building are one matter.",
        ),
        (
            "Spirit and Body",
            "Chapter 4",
            "To exercise the spirit is to turn to the Lord within. Prayer and praise are practical ways to do so.",
        ),
    ],
    [
        (
            "祷读的实行",
            "一　话与灵",
            "把经节化成祷告，话就成为灵和生命。我们不是只用头脑研读，乃是向主敞开。",
        ),
        (
            "祷读的实行",
            "二　呼求",
            "从里面深处呼求主名，那灵就得着一条路进入全人。呼求不是形式，乃是接触。",
        ),
        (
            "变化的过程",
            "一　新陈代谢",
            "变化是新陈代谢的过程，新的元素加进来，旧的元素被排出去。这需要时间。",
        ),
        (
            "变化的过程",
            "三　模成",
            "变化的终极是模成神长子的形像。这是生命成熟的结果，不是外面的模仿。",
        ),
    ],
]

# A real book in the corpus that was *not* retrieved for the set: citing it is fabrication too.
NOT_RETRIEVED = "荣耀的盼望，五　显现"

_SWAPS = {"神": "主", "灵": "魂", "生命": "道理", "里面": "外面", "life": "law", "source": "end"}


def _alter(text: str) -> str:
    for a, b in _SWAPS.items():
        if a in text:
            return text.replace(a, b, 1)
    return "不" + text


def _traditional(text: str) -> str:
    import opencc

    converted: str = opencc.OpenCC("s2t").convert(text)
    return converted.replace("，", ",").replace("。", ".")


def _first_sentence(text: str) -> str:
    for stop in ("。", ". "):
        if stop in text:
            return text.split(stop)[0].strip()
    return text


@dataclass
class Claim:
    kind: str  # valid | fabricated | misquoted
    style: str
    text: str = ""
    native: tuple[ModelCitation, ...] = ()


@dataclass
class Tally:
    claims: int = 0
    shown: int = 0
    removed: int = 0
    by_style: dict[str, list[int]] = field(default_factory=dict)  # style -> [claims, removed]


def claims_for(passages: tuple[Passage, ...], rng: random.Random) -> list[Claim]:
    out: list[Claim] = []
    n = len(passages)
    for p in passages:
        sentence = _first_sentence(p.chunk.text)
        other = passages[(p.index % n)]  # a different passage of the same set
        other_sentence = _first_sentence(other.chunk.text)
        # genuine citations
        out.append(Claim("valid", "marker [n]", f"这一点在资料中有说明[{p.index}]。"))
        out.append(Claim("valid", "quote 「」 + [n]", f"资料说「{sentence}」[{p.index}]。"))
        out.append(
            Claim(
                "valid",
                "quote, other script/width",
                f"资料说“{_traditional(sentence)}”[{p.index}]。",
            )
        )
        out.append(Claim("valid", "label 【】", f"这一点有依据【{p.label}】。"))
        out.append(
            Claim("valid", "native cited_text", "资料有此说", (ModelCitation(p.index, sentence),))
        )
        # fabricated sources
        out.append(
            Claim("fabricated", "marker out of range", f"另有一说[{n + rng.randint(1, 5)}]。")
        )
        out.append(
            Claim(
                "fabricated", "invented label", f"另有一说【属天的异象，第{rng.randint(2, 9)}章】。"
            )
        )
        out.append(Claim("fabricated", "label not retrieved", f"另有一说【{NOT_RETRIEVED}】。"))
        out.append(
            Claim(
                "fabricated",
                "native index out of range",
                "另有一说",
                (ModelCitation(n + 2, sentence),),
            )
        )
        # misquotations
        out.append(
            Claim("misquoted", "altered quote", f"资料说「{_alter(sentence)}」[{p.index}]。")
        )
        if other_sentence != sentence:
            out.append(
                Claim(
                    "misquoted",
                    "quote from another passage",
                    f"资料说「{other_sentence}」[{p.index}]。",
                )
            )
        out.append(
            Claim(
                "misquoted",
                "native cited_text altered",
                "资料有此说",
                (ModelCitation(p.index, _alter(sentence)),),
            )
        )
    return out


async def run() -> dict[str, object]:
    rng = random.Random(7)
    tallies = {k: Tally() for k in ("valid", "fabricated", "misquoted")}
    shown_total = shown_genuine = 0
    verify_seconds = 0.0
    citations_checked = 0
    for set_no, rows in enumerate(SETS):
        hits = [
            Hit(
                Chunk(f"s{set_no}c{i}", text, text, f"s{set_no}d{i}", source, "message", chapter),
                1 - i / 10,
            )
            for i, (source, chapter, text) in enumerate(rows)
        ]
        prompt = build_prompt("问题", hits)
        for claim in claims_for(prompt.passages, rng):
            # One reply per claim, through the scripted model, so each count is attributable.
            response = LLMResponse((TextSegment(claim.text, claim.native),))
            llm = ScriptedLLM([response])
            got = await llm.complete(prompt.request)
            started = time.perf_counter()
            verified = verify(got, prompt.passages)
            verify_seconds += time.perf_counter() - started
            citations_checked += verified.stats.shown + verified.stats.removed
            t = tallies[claim.kind]
            t.claims += 1
            t.shown += verified.stats.shown
            t.removed += 1 if verified.stats.removed else 0
            style = t.by_style.setdefault(claim.style, [0, 0])
            style[0] += 1
            style[1] += 1 if verified.stats.removed else 0
            for use in verified.uses:
                shown_total += 1
                genuine = claim.kind == "valid" and (
                    use.spot == claim.text  # a marker without a quote: the claim itself
                    or quote_found(use.spot, use.passage.chunk.text)
                )
                shown_genuine += genuine
    return {
        "tallies": tallies,
        "shown_total": shown_total,
        "shown_genuine": shown_genuine,
        "us_per_citation": 1e6 * verify_seconds / max(1, citations_checked),
    }


def report(result: dict[str, object]) -> str:
    tallies: dict[str, Tally] = result["tallies"]  # type: ignore[assignment]
    shown_total = int(result["shown_total"])  # type: ignore[call-overload]
    shown_genuine = int(result["shown_genuine"])  # type: ignore[call-overload]
    validity = 100.0 * shown_genuine / max(1, shown_total)
    lines = [
        "# Citation verification benchmark",
        "",
        "`bench/bench_citations.py`: scripted model replies (ScriptedLLM) over "
        f"{len(SETS)} retrieved-passage sets of 4 original passages each (Chinese and English). "
        "Every citation is generated with its ground truth; each reply carries one claim so "
        "each count is attributable.",
        "",
        f"- **Validity of shown citations: {validity:.1f}%** ({shown_genuine}/{shown_total})",
    ]
    for kind, label in (
        ("fabricated", "Fabricated sources caught"),
        ("misquoted", "Misquotations caught"),
    ):
        t = tallies[kind]
        lines.append(
            f"- **{label}: {t.removed}/{t.claims}** ({100.0 * t.removed / max(1, t.claims):.1f}%)"
        )
    v = tallies["valid"]
    lines.append(f"- Genuine citations wrongly removed: {v.removed}/{v.claims}")
    lines.append(f"- Verifier time: {result['us_per_citation']:.0f} µs per citation (this machine)")
    lines += ["", "| kind | style | claims | removed |", "|---|---|---:|---:|"]
    for kind, t in tallies.items():
        for style, (claims, removed) in t.by_style.items():
            lines.append(f"| {kind} | {style} | {claims} | {removed} |")
    lines += [
        "",
        "Styles: `[n]` markers (OpenAI-compatible models), 【书名，章节】 labels written in the "
        "text, and Claude's native citations (`cited_text` + `document_index`). Quotes are "
        "compared after NFKC width folding, whitespace/punctuation removal and OpenCC t2s, "
        "so a Traditional or half-width rendering of a real sentence still verifies; an "
        "ellipsis may skip text between quoted parts, in order.",
        "",
        "Limits (by design, not measured as failures here): the verifier checks that a cited "
        "source was retrieved and that *quoted* text is in it; it does not judge whether an "
        "unquoted paraphrase is a fair reading of the passage, and a quotation differing from "
        "the source only in punctuation or spacing counts as faithful. Quotes shorter than six "
        "characters are treated as terms, not quotations.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="also write the Markdown report here")
    args = parser.parse_args()
    text = report(asyncio.run(run()))
    print(text)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
