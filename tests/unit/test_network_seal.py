"""The network namespace: what stops the processes the in-process block cannot reach.

`tests/sandbox/netblock.py` runs in the pytest process and in every Python child that loads
`sitecustomize` from the suite's `PYTHONPATH`. A child started with `python -I`, `python -S -E`
or an empty environment never loads it, and curl is not Python: those are stopped only by the
kernel. `.ci/run` therefore runs the suite in a new network namespace with only loopback up
(`unshare --net`, `ip link set lo up`) and sets `TESTS_NETWORK_SEALED=1` there.

`tests/sandbox/seal_probe.py` starts each of those children. Every child must first reach a
loopback server (so a probe that cannot start, or a missing curl, fails here instead of looking
sealed), must not carry the block (so it is the kernel that stops it, not the block), and must
then fail to reach a public address with "network unreachable" — the error only a network
with no route at all gives (a machine with a default route times out, is refused or connects).
The control, a Python child of the suite's environment, must be stopped by the block itself.

- Inside the namespace (only `lo` exists): the probe runs directly, as the suite's children do.
- Outside it (a developer's `bash scripts/test.sh`): the suite is not sealed, so the probe runs
  in a fresh namespace made the way `.ci/run` makes it; the assertions are the same. Where no
  namespace can be made (no privilege, no `unshare`/`ip`), the test is skipped and says why.
- `TESTS_NETWORK_SEALED` set but more than loopback visible: fails (CI believes it is sealed
  and is not).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Refusals
from tests.sandbox import seal_probe

SEALED_ENV = "TESTS_NETWORK_SEALED"
PROBE = Path(seal_probe.__file__).resolve()
ESCAPES = ("python -I", "python -S -E", "python, empty environment", "curl")
CONTROL = "python, the suite's environment (control)"


def interfaces() -> set[str]:
    return {name for _, name in socket.if_nameindex()}


def sealed() -> bool:
    """Only the loopback interface exists: no packet can leave, whoever sends it."""
    return interfaces() == {"lo"}


def _namespace_command() -> list[str]:
    """The probe in a new network namespace with loopback up, as `.ci/run` makes it."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None:
        pytest.skip("not sealed, and no unshare/ip (util-linux, iproute2) to make a namespace")
    user = [] if os.geteuid() == 0 else ["--map-root-user"]
    lo_up = f'{ip} link set lo up && exec "$@"'
    return [unshare, "--net", *user, "--", "sh", "-c", lo_up, "sh"]


def _run_probe() -> dict[str, dict[str, Any]]:
    if sealed():
        prefix: list[str] = []
    elif os.environ.get(SEALED_ENV):
        pytest.fail(f"{SEALED_ENV} is set but the suite sees interfaces {sorted(interfaces())}")
    else:
        prefix = _namespace_command()
    done = subprocess.run(
        [*prefix, sys.executable, "-I", str(PROBE)], capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0 and prefix and "unshare" in done.stderr:
        pytest.skip(f"not sealed, and no network namespace can be made here: {done.stderr}")
    assert done.returncode == 0, done.stderr
    result: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return result


@pytest.mark.serial  # a namespace and children of its own: run apart (tests/parallel.py)
def test_children_the_block_cannot_reach_fail_to_leave_the_machine(
    refused_connections: Refusals,
) -> None:
    routes = _run_probe()
    assert set(routes) == {*ESCAPES, CONTROL}, routes
    for route in ESCAPES:
        assert routes[route] == {"block": False, "loopback": True, "public": "unreachable"}, (
            route,
            routes[route],
        )
    control = routes[CONTROL]
    assert control == {"block": True, "loopback": True, "public": "NetworkBlocked"}, control
    [logged] = refused_connections()  # the control's refusal, written by its block
    assert f"connect(('{seal_probe.PUBLIC}', 80))" in logged
