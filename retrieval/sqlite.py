"""Opening the one SQLite file the way every owner of a table does: WAL, a busy timeout, the
owner's schema, and no connection left open when any of that fails."""

from __future__ import annotations

from pathlib import Path

import aiosqlite


async def open_sqlite(path: Path, schema: str) -> aiosqlite.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = await aiosqlite.connect(path)
    try:
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA busy_timeout=5000")
        await db.executescript(schema)
        await db.commit()
    except BaseException:
        await db.close()
        raise
    return db
