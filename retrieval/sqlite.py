"""Opening the one SQLite file the way every owner of a table does: WAL, a busy timeout, the
owner's schema and column migrations, and no connection left open when any of that fails.

The statement cache is off (`cached_statements=0`), on purpose. aiosqlite runs each statement
on the connection's worker thread, but a cursor its caller drops (`await db.execute(...)`
without `async with`) is freed on the event loop's thread, and CPython's sqlite3 resets the
cursor's statement as it frees it. With the cache on, identical SQL shares one statement
object, which by then may be running for another coroutine on the worker thread. The reset
lands in the middle of it: `sqlite3.InterfaceError: bad parameter or other API misuse`. CI hit
it with eight concurrent `/ask`s of one question (the embedding cache's INSERT); with the cache
on, 68 rounds in 300 of eight concurrent identical embedding-cache calls failed, and 19 in 300 of
`tests/unit/test_sqlite.py`'s race. Without the cache every cursor owns its
statement, so freeing one touches nobody else's. Preparing each statement costs ~20 µs on this
machine (a point lookup: 160-175 → 185-190 µs round trip through aiosqlite).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import aiosqlite

Column = tuple[str, str, str]  # (table, column, definition): added when a table lacks it


async def open_sqlite(
    path: Path,
    schema: str,
    *,
    autocommit: bool = False,
    foreign_keys: bool = False,
    columns: Sequence[Column] = (),
) -> aiosqlite.Connection:
    """A connection to `path` with `schema` applied (idempotent `CREATE ... IF NOT EXISTS`)
    and every column in `columns` present: a data directory from before a column existed
    gains it. `autocommit` opens it without implicit transactions (`isolation_level=None`);
    the owner then writes `BEGIN` / `COMMIT` itself."""
    path.parent.mkdir(parents=True, exist_ok=True)
    isolation = None if autocommit else ""  # "": sqlite3's default, implicit transactions
    db = await aiosqlite.connect(path, isolation_level=isolation, cached_statements=0)
    try:
        await db.execute_fetchall("PRAGMA journal_mode=WAL")
        await db.execute_fetchall("PRAGMA busy_timeout=5000")
        if foreign_keys:
            await db.execute_fetchall("PRAGMA foreign_keys=ON")
        async with db.executescript(schema):
            pass
        for table, column, definition in columns:
            present = {row[1] for row in await db.execute_fetchall(f"PRAGMA table_info({table})")}
            if column not in present:
                await db.execute_fetchall(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
        await db.commit()
    except BaseException:
        await db.close()
        raise
    return db
