"""A child process for tests/reliability/test_ingest_resume.py: `baibao ingest FOLDER` as the
CLI runs it (the App from the environment's settings, the product's `Pipeline`), printing
`FILE <name>` each time a file is done (indexed or skipped), so the parent knows how far it
got without watching a clock. `--read-process`: it reads in a process of its own however
small the folder (`ingest.read_process`).

    python -m tests.reliability.helpers.ingest_child FOLDER [--read-process]
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path


async def ingest(folder: Path, read_process: bool) -> None:
    from bot.app import App
    from bot.settings import load_settings
    from ingest.pipeline import IngestProgress, Pipeline
    from ingest.read_process import ReadOffload

    done = 0

    def progress(p: IngestProgress) -> None:
        nonlocal done
        if p.files_done > done:
            done = p.files_done
            print("FILE", p.current, flush=True)

    async with App(load_settings(), llm=None) as app:
        reading = ReadOffload(min_bytes=0) if read_process else None
        pipeline = Pipeline(app.indexer, reading=reading)
        summary = await pipeline.ingest_paths([folder], on_progress=progress)
    print("SUMMARY", summary.documents, summary.unchanged, len(summary.skipped), flush=True)


if __name__ == "__main__":
    asyncio.run(ingest(Path(sys.argv[1]), "--read-process" in sys.argv[2:]))
