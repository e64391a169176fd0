"""The suite on every core: which tests run in parallel processes, which run apart.

`scripts/test.sh` runs pytest twice with the same arguments:

1. `-n auto --dist loadgroup --without-serial`: every test not marked `serial`, spread over one
   pytest-xdist worker per core (each worker a process of its own, with its own session
   directory, temp dirs, environment scrub and network block: `tests/conftest.py`);
2. `-n 0 --only-serial`: the tests marked `serial`, one at a time, in one process, after the
   others have finished: the ones that need the machine to themselves (the SIGKILL campaign
   kills its children after a random real-time delay).

Both runs take the same `-p randomly --randomly-seed=N --hypothesis-seed=N`, so a seed printed
by either replays that run (`bash scripts/test.sh -p randomly --randomly-seed=N …`; add `-n 0`
to replay the parallel part in one process, in the seed's order).

Expensive session fixtures. One whose result is a directory the tests only read (or copy) is
built once for the whole run and shared by the workers (`tests/shared_dirs.py`, e.g. the e2e
sample corpus). One that holds a model, open stores or a process cannot be shared between
processes: the tests using it go to one worker together, so it is built once and not once per
worker. `GROUPS` names them by folder (the e5 model and its corpora, `tests/quality/conftest.py`);
`GroupScheduling` sends every other test on its own (`--dist loadgroup` picks it). It does not
read `xdist_group` marks: pytest-xdist 3.8 groups them by rewriting `item._nodeid`, which pytest 9
no longer reads, so they group nothing.

What a test must do to run beside others, in another process, in any order:

- write only under `tmp_path` / `tmp_path_factory` (each test already has its own working
  directory and `DATA_DIR`: `tests/conftest.py::_clean_env`); never a fixed path in /tmp, the
  repository or the home directory;
- bind servers to 127.0.0.1 port 0 and read the port back; never a fixed port;
- set environment variables with `monkeypatch`, never for the rest of the process;
- share a fixture through a `conftest.py`, never by importing it from another test module
  (each import defines the fixture again: a session fixture is then built once per module);
- a session fixture that builds a directory: `tests.shared_dirs.built_once`, the tests copy it
  before writing; one that holds a model, a process or an open store: its folder in `GROUPS`;
- wait on an injected clock or on an event, never on real time; a test that cannot (it kills a
  process after a real-time delay) is marked `serial`;
- depend on no other test having run before it.
"""

from __future__ import annotations

import pytest
import xdist
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling

SERIAL = "serial"
# Tests that must run on one worker together, by folder → the group's name.
GROUPS = {"tests/quality/": "e5"}


class GroupScheduling(LoadScopeScheduling):
    """Each test is a unit of work of its own (as with `--dist load`), except the tests under
    a `GROUPS` folder: one unit per group, sent first (units go out largest first)."""

    def _split_scope(self, nodeid: str) -> str:
        for folder, group in GROUPS.items():
            if nodeid.startswith(folder):
                return group
        return nodeid


@pytest.hookimpl(tryfirst=True)  # before xdist's own choice
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> GroupScheduling | None:
    return GroupScheduling(config, log) if config.getoption("dist") == "loadgroup" else None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("baibao", "which tests run apart (tests/parallel.py)")
    group.addoption(
        "--without-serial",
        action="store_true",
        help="deselect the tests marked serial (scripts/test.sh's parallel run)",
    )
    group.addoption(
        "--only-serial",
        action="store_true",
        help="select only the tests marked serial (scripts/test.sh's second run)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{SERIAL}: needs the machine to itself (real-time delays): scripts/test.sh runs it "
        "after the parallel run, alone",
    )


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    _select(config, items)
    if xdist.is_xdist_worker(session):
        reason = "needs the machine to itself: run without -n (scripts/test.sh runs it apart)"
        for item in items:
            if item.get_closest_marker(SERIAL) is not None:
                item.add_marker(pytest.mark.skip(reason=reason))


def _select(config: pytest.Config, items: list[pytest.Item]) -> None:
    without, only = config.getoption("without_serial"), config.getoption("only_serial")
    if without and only:
        raise pytest.UsageError("--without-serial and --only-serial exclude each other")
    if not (without or only):
        return
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        serial = item.get_closest_marker(SERIAL) is not None
        (keep if serial == only else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
