"""What the end-to-end tests share: the bundled sample corpus prepared once per test run.

`prepared` is the data directory `App.prepare_samples()` makes with the in-process hash
embedder (the offline model is exercised in `test_demo.py`): built once for the whole run,
whatever the number of xdist workers (`tests/shared_dirs.py`), never written to. Each test
works on its own copy of it (`data_dir`).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.settings import Settings, load_settings
from retrieval.fakes import HashEmbedder
from tests.shared_dirs import built_once

DIM = 64


def stack_settings(data_dir: Path, **overrides: Any) -> Settings:
    """The settings the e2e tests run the stack with (one short Bible book embedded)."""
    base: dict[str, Any] = {
        "data_dir": data_dir,
        "demo_bible_books": "Eph",
        "rate_limit_user_per_min": 0,
        "rate_limit_chat_per_min": 0,
    }
    return load_settings(**{**base, **overrides})


def _prepare(folder: Path) -> None:
    data = folder / "data"

    async def prepare() -> None:
        async with App(stack_settings(data), embedder=HashEmbedder(DIM), llm=None) as app:
            assert await app.prepare_samples()

    asyncio.run(prepare())
    (data / "baibao.lock").unlink(missing_ok=True)


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_once(tmp_path_factory, "e2e-samples-hash", _prepare) / "data"


@pytest.fixture
def data_dir(prepared: Path, tmp_path: Path) -> Path:
    target = tmp_path / "stack"
    shutil.copytree(prepared, target)
    return target
