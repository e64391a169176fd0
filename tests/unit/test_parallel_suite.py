"""How `scripts/test.sh` splits the suite (tests/parallel.py): the parallel run leaves out the
tests marked `serial`, the second run takes only them, and a worker never runs one; the tests
sharing the e5 model go to one worker, every other test on its own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.parallel import GROUPS, GroupScheduling

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ("-p", "tests.parallel", "-p", "no:randomly", "-p", "no:asyncio")
SUITE = """
import pytest

@pytest.mark.serial
def test_alone():
    pass

def test_beside_others():
    pass
"""


@pytest.mark.parametrize(
    ("option", "ran", "left_out"),
    [("--without-serial", "test_beside_others", 1), ("--only-serial", "test_alone", 1)],
)
def test_each_run_takes_its_half(
    pytester: pytest.Pytester, option: str, ran: str, left_out: int
) -> None:
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(*PLUGINS, "-v", option)
    result.assert_outcomes(passed=1, deselected=left_out)
    result.stdout.fnmatch_lines([f"*::{ran} PASSED*"])


def test_both_halves_at_once_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(*PLUGINS, "--without-serial", "--only-serial")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_worker_skips_a_serial_test_it_is_handed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ["PYTHONPATH"]]))
    pytester.makepyfile(SUITE)
    result = pytester.runpytest_subprocess(*PLUGINS, "-n", "2", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*needs the machine to itself*"])


def test_the_e5_tests_are_one_unit_of_work_and_the_others_one_each() -> None:
    split = GroupScheduling._split_scope
    assert GROUPS == {"tests/quality/": "e5"}
    assert split(None, "tests/quality/test_dev_slice.py::test_dev_slice_floor[fused]") == "e5"  # type: ignore[arg-type]
    assert split(None, "tests/quality/test_relevance.py::test_x") == "e5"  # type: ignore[arg-type]
    unit = "tests/unit/test_fuse.py::test_basic_scores_and_ranks"
    assert split(None, unit) == unit  # type: ignore[arg-type]
