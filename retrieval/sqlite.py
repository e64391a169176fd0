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
from typing import Self

import aiosqlite

from retrieval.lifecycle import Closing

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


class SqliteOwner(Closing):
    """A resource that owns one SQLite connection: `async with` (or `open()`) opens it with the
    owner's schema and runs `_loaded` on it; the connection is closed again when `_loaded`
    fails, and by `close()`. A subclass reads what it keeps in memory in `_loaded`."""

    def __init__(self, db_path: Path | str, schema: str, *, columns: Sequence[Column] = ()) -> None:
        """`columns`: added to their tables when a data directory from before lacks them."""
        self._db_path = Path(db_path)
        self._schema = schema
        self._columns = tuple(columns)
        self._db: aiosqlite.Connection | None = None

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def open(self) -> None:
        """Open the connection (once: an open owner stays as it is)."""
        if self._db is not None:
            return
        db = await open_sqlite(self._db_path, self._schema, columns=self._columns)
        try:
            await self._loaded(db)
        except BaseException:
            await db.close()
            raise
        self._db = db

    async def _loaded(self, db: aiosqlite.Connection) -> None:
        """Read what the owner keeps in memory from the new connection (nothing by default)."""

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    @property
    def db(self) -> aiosqlite.Connection:
        """The open connection; RuntimeError before `async with` (or after `close()`)."""
        if self._db is None:
            name = type(self).__name__
            raise RuntimeError(f"{name} is not open: use `async with {name}(...)`")
        return self._db
