"""The README's test command, timed, alone or beside a CPU hog (issue 40).

    .venv/bin/python bench/suite_run.py --runs 3 --hog 2    # three runs beside two busy loops
    .venv/bin/python bench/suite_run.py --runs 1 --hog 0    # one run on the machine as it is
    bash scripts/hog-test.sh                                  # the same as the first line

Each run is `bash scripts/test.sh -p randomly --randomly-seed=S --hypothesis-seed=S` with a new
seed (printed, so a failure replays), as `.ci/run` runs it. The hog is `--hog` processes each
spinning a pure-Python busy loop (like `stress-ng --cpu N`, with nothing to install) at the
test run's own priority, started before the run and stopped after it.

Reported per run: pass or fail (the exit code and pytest's closing lines), wall time, the CPU
time (user+sys) of the test run's whole process tree (the hog's own CPU is not in it), the load
average at the end. The table goes to stdout and, with `--out`, to a Markdown file.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLOSING = re.compile(r"^=*\s*(\d+ (passed|failed|error|deselected|skipped).*?)\s*=*$")


@dataclass
class SuiteRun:
    seed: int
    hog: int
    exit_code: int
    wall_s: float
    cpu_s: float
    load_1min: float
    closing: list[str]

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


def start_hog(n: int) -> list[subprocess.Popen[bytes]]:
    loop = "while True:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(n)]


def stop_hog(hog: list[subprocess.Popen[bytes]]) -> None:
    for proc in hog:
        proc.kill()
    for proc in hog:
        proc.wait()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(seed: int, hog_n: int, extra: list[str], log: Path | None) -> SuiteRun:
    cmd = ["bash", "scripts/test.sh", "-p", "randomly", f"--randomly-seed={seed}"]
    cmd += [f"--hypothesis-seed={seed}", *extra]
    print(f"== seed {seed}, hog {hog_n}: {' '.join(cmd)}", flush=True)
    hog = start_hog(hog_n)
    try:
        cpu = children_cpu()  # the hog is not reaped yet: its CPU is not counted here
        started = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - started
        cpu = children_cpu() - cpu
    finally:
        stop_hog(hog)
    output = done.stdout + done.stderr
    if log is not None:
        log.write_text(output, encoding="utf-8")
    closing = [m.group(1) for line in output.splitlines() if (m := CLOSING.match(line.strip()))]
    return SuiteRun(
        seed, hog_n, done.returncode, round(wall, 1), round(cpu, 1), os.getloadavg()[0], closing
    )


def table(runs: list[SuiteRun]) -> str:
    lines = [
        "| run | seed | hog | result | wall | CPU (user+sys) | load (1 min) | pytest's closing lines |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        result = "pass" if r.passed else f"**FAIL** (exit {r.exit_code})"
        lines.append(
            f"| {i} | {r.seed} | {r.hog} busy loops | {result} | {r.wall_s / 60:.1f} min |"
            f" {r.cpu_s / 60:.1f} min | {r.load_1min:.1f} | {' / '.join(r.closing)} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hog", type=int, default=2, help="busy loops beside the suite (0: none)")
    ap.add_argument("--out", type=Path, help="also write the table (Markdown) here")
    ap.add_argument("--logs", type=Path, help="keep each run's output in this folder")
    ap.add_argument("pytest_args", nargs="*", help="more arguments for scripts/test.sh")
    args = ap.parse_args()
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    runs: list[SuiteRun] = []
    for i in range(args.runs):
        seed = random.randrange(2**32)
        log = args.logs / f"run{i + 1}-seed{seed}.log" if args.logs else None
        runs.append(one_run(seed, args.hog, args.pytest_args, log))
        print(table(runs[-1:]).splitlines()[-1], flush=True)
    print()
    print(table(runs))
    print(json.dumps([asdict(r) for r in runs]))
    if args.out:
        args.out.write_text(table(runs) + "\n", encoding="utf-8")
    sys.exit(0 if all(r.passed for r in runs) else 1)


if __name__ == "__main__":
    main()
