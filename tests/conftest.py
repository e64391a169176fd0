"""Suite-wide set-up: the network is closed except loopback, in this process and in every Python
process a test starts; no test sees the caller's settings, tokens or working directory.

Both are installed in `pytest_configure`, before collection and before any fixture of any scope
runs, so session- and module-scoped fixtures are covered as well as tests. Per test, `_clean_env`
repeats the scrub (a test may have leaked a variable), gives the test its own data directory and
working directory, and `_no_network_attempts` fails any test during which something tried to
reach beyond loopback, even if the code under test swallowed the `NetworkBlocked` error.
"""

from __future__ import annotations

import functools
import gc
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox import netblock
from tests.sandbox.netblock import NetworkBlocked

__all__ = ["NetworkBlocked"]

pytest_plugins = ["pytester", "tests.stubs.fixtures", "tests.timing", "tests.parallel"]

SANDBOX = Path(__file__).resolve().parent / "sandbox"

# Environment variables a developer's shell or CI may carry that would change what tests do:
# the product's settings (pydantic-settings, case-insensitive), the SDKs' own variables, proxies.
_SCRUB_PREFIXES = (
    "DISCORD_",
    "TELEGRAM_",
    "ANTHROPIC_",
    "OPENAI_",
    "LLM_",
    "EMBEDDING_",
    "QDRANT_",
    "NOVEL_",
    "RATE_LIMIT_",
    "FUSION_",
    "DEMO_",
)
_SCRUB_NAMES = {
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
}
_session_dir: Path | None = None


@functools.cache
def _settings_variables() -> frozenset[str]:
    from bot.settings import Settings

    return frozenset(name.upper() for name in Settings.model_fields)


def _scrubbed(name: str, settings: frozenset[str]) -> bool:
    upper = name.upper()
    return upper in settings or upper in _SCRUB_NAMES or upper.startswith(_SCRUB_PREFIXES)


def pytest_configure(config: pytest.Config) -> None:
    global _session_dir
    netblock.install(to_file=False)
    settings = _settings_variables()
    for name in list(os.environ):
        if _scrubbed(name, settings):
            del os.environ[name]
    # Python children inherit the block through tests/sandbox/sitecustomize.py.
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SANDBOX), previous) if p)
    _session_dir = Path(tempfile.mkdtemp(prefix="baibao-tests-"))
    os.environ[netblock.LOG_ENV] = str(_session_dir / "netblock.log")
    if _xdist_controller(config):
        return  # it runs no test; its workers start where it stands and read the repository's
        # configuration there, then each moves to a session directory of its own (below)
    # Session- and module-scoped fixtures run here, never in the repository (no .env, no data/).
    cwd = _session_dir / "cwd"
    cwd.mkdir()
    os.chdir(cwd)
    os.environ["DATA_DIR"] = str(cwd / "data")


def _xdist_controller(config: pytest.Config) -> bool:
    """This process hands tests to pytest-xdist workers (`-n N`) and runs none itself."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return not worker and config.getoption("dist", "no") != "no"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _session_dir is not None:
        os.chdir(config.invocation_params.dir)
        shutil.rmtree(_session_dir, ignore_errors=True)


def _child_refusals() -> list[str]:
    path = Path(os.environ.get(netblock.LOG_ENV, ""))
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    path.unlink()
    return lines


class Refusals:
    """The refusals recorded so far in this test: this process's, then its children's."""

    def __call__(self) -> list[str]:
        path = Path(os.environ.get(netblock.LOG_ENV, ""))
        children = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        return [*netblock.refusals, *children]


@pytest.fixture
def refused_connections() -> Iterator[Refusals]:
    """For tests of the block itself: what was refused, which `_no_network_attempts` then does
    not count against the test."""
    yield Refusals()
    netblock.refusals.clear()
    _child_refusals()


@pytest.fixture(autouse=True)
def _no_network_attempts() -> Iterator[None]:
    netblock.refusals.clear()
    _child_refusals()
    yield
    attempts = [*netblock.refusals, *_child_refusals()]
    netblock.refusals.clear()
    if attempts:
        pytest.fail("network access beyond loopback:\n" + "\n".join(attempts), pytrace=False)


@pytest.fixture(autouse=True)
def _nothing_frozen_after() -> Iterator[None]:
    """A serving App freezes what it built (`bot.app.keep_what_start_up_built`); the next test
    starts with nothing frozen, so nothing a test built stays out of collections for the run."""
    yield
    gc.unfreeze()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the developer's .env or tokens; each gets its own data directory."""
    settings = _settings_variables()
    for key in list(os.environ):
        if _scrubbed(key, settings):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
