"""A child process for tests/reliability/test_ingest_resume.py: `baibao ingest FOLDER` as the
CLI runs it (the App from the environment's settings, the product's `Pipeline`), printing
`FILE <name>` each time a file is done (indexed or skipped), so the parent knows how far it
got without watching a clock.

    python -m tests.reliability.helpers.ingest_child FOLDER
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path


async def ingest(folder: Path) -> None:
    from bot.app import App
    from bot.settings import load_settings
    from ingest.pipeline import IngestProgress, Pipeline

    done = 0

    def progress(p: IngestProgress) -> None:
        nonlocal done
        if p.files_done > done:
            done = p.files_done
            print("FILE", p.current, flush=True)

    async with App(load_settings(), llm=None) as app:
        summary = await Pipeline(app.indexer).ingest_paths([folder], on_progress=progress)
    print("SUMMARY", summary.documents, summary.unchanged, len(summary.skipped), flush=True)


if __name__ == "__main__":
    asyncio.run(ingest(Path(sys.argv[1])))
