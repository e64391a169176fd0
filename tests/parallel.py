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

Tests that share an expensive session fixture are sent to one worker together with
`pytest.mark.xdist_group(name)` (`--dist loadgroup`): each worker would otherwise build the
fixture once, in parallel, and pay for it twice (e5 corpora: `tests/quality/conftest.py`).
"""

from __future__ import annotations

import pytest
import xdist

SERIAL = "serial"


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
    without, only = config.getoption("without_serial"), config.getoption("only_serial")
    if without and only:
        raise pytest.UsageError("--without-serial and --only-serial exclude each other")
    if without or only:
        keep: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            serial = item.get_closest_marker(SERIAL) is not None
            (keep if serial == only else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
    if xdist.is_xdist_worker(session):
        reason = "needs the machine to itself: run without -n (scripts/test.sh runs it apart)"
        for item in items:
            if item.get_closest_marker(SERIAL) is not None:
                item.add_marker(pytest.mark.skip(reason=reason))
