"""Where the suite's time goes: every test phase and every fixture set-up, in wall and CPU time.

Off unless asked: `--timings=DIR` (or `TESTS_TIMINGS_DIR`) makes each pytest process (the
controller and every xdist worker) write `DIR/timings-<worker>.jsonl`, one JSON object a line:

- `{"kind": "phase", "test", "phase", "wall", "cpu", "children"}` for setup, call and teardown
  of each test: `cpu` is this process's user+sys (all its threads), `children` the user+sys of
  the child processes that ended in the meantime (a CLI run, the Edge store process);
- `{"kind": "fixture", "test", "fixture", "scope", "where", "wall", "cpu", "children"}` for each
  fixture set-up (a session or module fixture is set up once, by the first test that needs it;
  its time is its own, the fixtures it depends on are set up before it and counted apart);
- `{"kind": "session", "worker", "wall", "cpu", "children"}` once per process.

`bench/suite_time.py` turns these files into the tables of `bench/results/suite-time.md`.
CPU time is the figure to compare between runs on a shared machine: wall time moves with
whatever else runs, CPU time much less.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ENV = "TESTS_TIMINGS_DIR"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--timings",
        metavar="DIR",
        default=os.environ.get(ENV) or None,
        help="write per-test and per-fixture wall/CPU times to DIR/timings-<worker>.jsonl",
    )


class Clock:
    """Wall, own CPU and ended children's CPU, read together."""

    @staticmethod
    def read() -> tuple[float, float, float]:
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.perf_counter(), time.process_time(), kids.ru_utime + kids.ru_stime

    @classmethod
    def since(cls, start: tuple[float, float, float]) -> dict[str, float]:
        now = cls.read()
        wall, cpu, children = (round(b - a, 4) for a, b in zip(start, now, strict=True))
        return {"wall": wall, "cpu": cpu, "children": children}


class Recorder:
    def __init__(self, folder: Path, worker: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"timings-{worker}.jsonl"
        self.worker = worker
        self.rows: list[dict[str, Any]] = []
        self.started = Clock.read()
        self.current = ""

    def _phase(self, item: pytest.Item, phase: str) -> Generator[None, None, None]:
        self.current = item.nodeid
        start = Clock.read()
        yield
        self.rows.append(
            {"kind": "phase", "test": item.nodeid, "phase": phase, **Clock.since(start)}
        )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        yield from self._phase(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        yield from self._phase(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        yield from self._phase(item, "teardown")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
    ) -> Generator[None, None, None]:
        start = Clock.read()
        yield
        self.rows.append(
            {
                "kind": "fixture",
                "test": self.current,
                "fixture": fixturedef.argname,
                "scope": fixturedef.scope,
                "where": fixturedef.baseid,
                **Clock.since(start),
            }
        )

    def pytest_sessionfinish(self) -> None:
        self.rows.append({"kind": "session", "worker": self.worker, **Clock.since(self.started)})
        with self.path.open("a", encoding="utf-8") as out:
            for row in self.rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.rows.clear()


def pytest_configure(config: pytest.Config) -> None:
    folder = config.getoption("timings")
    if folder:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        path = Path(folder)
        if not path.is_absolute():
            path = Path(config.invocation_params.dir) / path
        config.pluginmanager.register(Recorder(path, worker), "baibao-timings")
