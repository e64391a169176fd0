"""Where the test suite's time goes, from the files `--timings=DIR` writes (tests/timing.py).

    bash scripts/test.sh --timings=/tmp/timings              # or pytest … --timings=…
    .venv/bin/python bench/suite_time.py /tmp/timings        # the tables, in Markdown
    .venv/bin/python bench/suite_time.py AFTER --before BEFORE   # side by side

Tables: the whole run; by folder; the slowest files, tests and fixtures. Each in wall seconds
(summed over tests: with N workers the run takes about sum / N) and CPU seconds (the test's
process, user+sys, plus the child processes it ran). CPU time is what to compare between runs
on a shared machine: wall time moves with the load, CPU time much less.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Cost:
    wall: float = 0.0
    cpu: float = 0.0
    children: float = 0.0
    count: int = 0
    names: set[str] = field(default_factory=set)

    def add(self, row: dict[str, object], name: str = "") -> None:
        self.wall += float(row["wall"])  # type: ignore[arg-type]
        self.cpu += float(row["cpu"])  # type: ignore[arg-type]
        self.children += float(row["children"])  # type: ignore[arg-type]
        if name:
            self.names.add(name)
        self.count += 1

    @property
    def all_cpu(self) -> float:
        return self.cpu + self.children


@dataclass
class Timings:
    phases: list[dict[str, object]]
    fixtures: list[dict[str, object]]
    sessions: list[dict[str, object]]

    @classmethod
    def read(cls, folder: Path) -> Timings:
        rows = [
            json.loads(line)
            for path in sorted(folder.glob("timings-*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        return cls(
            [r for r in rows if r["kind"] == "phase"],
            [r for r in rows if r["kind"] == "fixture"],
            [r for r in rows if r["kind"] == "session"],
        )

    def by(self, key: str) -> dict[str, Cost]:
        out: dict[str, Cost] = defaultdict(Cost)
        for row in self.phases:
            test = str(row["test"])
            path = test.split("::")[0]
            name = {
                "folder": "/".join(path.split("/")[:2]),
                "file": path,
                "test": test,
            }[key]
            out[name].add(row, test)
        return out

    def fixtures_by_name(self) -> dict[str, Cost]:
        out: dict[str, Cost] = defaultdict(Cost)
        for row in self.fixtures:
            where = str(row["where"]) or "(plugin)"
            out[f"{row['fixture']} ({row['scope']}, {where})"].add(row)
        return out

    def total(self) -> Cost:
        cost = Cost()
        for row in self.phases:
            cost.add(row, str(row["test"]))
        return cost


def _table(title: str, rows: dict[str, Cost], top: int, unit: str = "tests") -> list[str]:
    lines = [
        f"### {title}",
        "",
        f"| | {unit} | wall s | CPU s (own + children) | children s |",
        "|---|---|---|---|---|",
    ]
    ordered = sorted(rows.items(), key=lambda kv: kv[1].wall, reverse=True)
    for name, c in ordered[:top]:
        n = len(c.names) if unit == "tests" else c.count
        lines.append(f"| `{name}` | {n} | {c.wall:.1f} | {c.all_cpu:.1f} | {c.children:.1f} |")
    return [*lines, ""]


def _side_by_side(
    title: str, after: dict[str, Cost], before: dict[str, Cost], top: int
) -> list[str]:
    lines = [
        f"### {title}",
        "",
        "| | wall s before | wall s after | CPU s before | CPU s after |",
        "|---|---|---|---|---|",
    ]
    names = sorted(
        set(after) | set(before),
        key=lambda n: max(after.get(n, Cost()).wall, before.get(n, Cost()).wall),
        reverse=True,
    )
    for name in names[:top]:
        a, b = after.get(name, Cost()), before.get(name, Cost())
        lines.append(
            f"| `{name}` | {b.wall:.1f} | {a.wall:.1f} | {b.all_cpu:.1f} | {a.all_cpu:.1f} |"
        )
    return [*lines, ""]


def report(t: Timings, top: int) -> str:
    total = t.total()
    workers = [s for s in t.sessions if s["worker"] != "main" or len(t.sessions) == 1]
    lines = [
        f"{len(total.names)} tests; summed over tests: wall {total.wall:.0f} s, CPU "
        f"{total.all_cpu:.0f} s ({total.cpu:.0f} s in the pytest processes, "
        f"{total.children:.0f} s in the child processes they ran); "
        f"{len(workers)} process(es) ran tests.",
        "",
    ]
    lines += _table("By folder", t.by("folder"), top)
    lines += _table("Slowest files", t.by("file"), top)
    lines += _table("Slowest tests (setup + call + teardown)", t.by("test"), top)
    lines += _table("Slowest fixtures (set-up only)", t.fixtures_by_name(), top, "set-ups")
    return "\n".join(lines)


def compare(after: Timings, before: Timings, top: int) -> str:
    a, b = after.total(), before.total()
    lines = [
        "| | tests | wall s (summed over tests) | CPU s (own + children) |",
        "|---|---|---|---|",
        f"| before | {len(b.names)} | {b.wall:.0f} | {b.all_cpu:.0f} |",
        f"| after | {len(a.names)} | {a.wall:.0f} | {a.all_cpu:.0f} |",
        "",
    ]
    lines += _side_by_side("By folder", after.by("folder"), before.by("folder"), top)
    lines += _side_by_side("Slowest files", after.by("file"), before.by("file"), top)
    lines += _side_by_side(
        "Slowest fixtures (set-up)", after.fixtures_by_name(), before.fixtures_by_name(), top
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("timings", type=Path, help="the --timings directory")
    ap.add_argument("--before", type=Path, help="another run's directory, side by side")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    after = Timings.read(args.timings)
    if args.before is None:
        print(report(after, args.top))
    else:
        print(compare(after, Timings.read(args.before), args.top))


if __name__ == "__main__":
    main()
