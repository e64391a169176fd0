"""`open_sqlite`: the one way every owner opens the SQLite file (real SQLite, real aiosqlite)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from retrieval.sqlite import open_sqlite

SCHEMA = """
CREATE TABLE IF NOT EXISTS item (key TEXT PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS child (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL REFERENCES item(key)
);
"""


async def test_concurrent_identical_statements_whose_cursors_are_dropped(tmp_path: Path) -> None:
    # The race in the module docstring: coroutines running the same SQL on one connection and
    # dropping their cursors on the event loop's thread. With sqlite3's statement cache on,
    # 19 rounds in 300 of this failed with `InterfaceError: bad parameter or other API misuse`
    # (as the embedding cache did under eight concurrent /ask in CI, stop 20), so 150 rounds
    # catch it all but certainly (0.94^150 < 1e-4).
    db = await open_sqlite(tmp_path / "race.sqlite3", SCHEMA)
    try:

        async def writer(round_no: int, i: int) -> None:
            rows = [(f"{round_no}-{i % 3}-{j}", bytes(256)) for j in range(2)]
            await db.executemany("INSERT OR REPLACE INTO item (key, body) VALUES (?, ?)", rows)
            await db.commit()
            await db.execute("SELECT body FROM item WHERE key IN (?, ?)", [k for k, _ in rows])

        for round_no in range(150):
            await asyncio.gather(*(writer(round_no, i) for i in range(8)))
        (count,) = (await db.execute_fetchall("SELECT COUNT(*) FROM item"))[0]
        assert count == 150 * 3 * 2
    finally:
        await db.close()


async def test_a_table_from_before_a_column_gains_it(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as old:  # a data dir written before `note` existed
        old.execute("CREATE TABLE item (key TEXT PRIMARY KEY, body BLOB NOT NULL)")
        old.execute("INSERT INTO item VALUES ('a', x'00')")
    old.close()
    columns = [("item", "note", "TEXT NOT NULL DEFAULT ''")]
    for _ in range(2):  # the second open finds the column and leaves it alone
        db = await open_sqlite(path, SCHEMA, columns=columns)
        try:
            rows = await db.execute_fetchall("SELECT key, note FROM item")
            assert [tuple(r) for r in rows] == [("a", "")]
        finally:
            await db.close()


async def test_autocommit_and_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "auto.sqlite3"
    db = await open_sqlite(path, SCHEMA, autocommit=True, foreign_keys=True)
    try:
        await db.execute_fetchall("INSERT INTO item VALUES ('a', x'00')")
        with sqlite3.connect(path) as other:  # visible without a COMMIT: no implicit transaction
            assert other.execute("SELECT COUNT(*) FROM item").fetchone() == (1,)
        other.close()
        with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
            await db.execute_fetchall("INSERT INTO child (key) VALUES ('missing')")
    finally:
        await db.close()


async def test_implicit_transactions_by_default(tmp_path: Path) -> None:
    path = tmp_path / "tx.sqlite3"
    db = await open_sqlite(path, SCHEMA)
    try:
        await db.execute_fetchall("INSERT INTO item VALUES ('a', x'00')")
        with sqlite3.connect(path) as other:
            assert other.execute("SELECT COUNT(*) FROM item").fetchone() == (0,)
            await db.commit()
            assert other.execute("SELECT COUNT(*) FROM item").fetchone() == (1,)
        other.close()
        # and foreign keys stay SQLite's default (off) unless asked for
        await db.execute_fetchall("INSERT INTO child (key) VALUES ('missing')")
    finally:
        await db.close()


async def test_a_schema_that_fails_leaves_no_connection_open(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    with pytest.raises(sqlite3.OperationalError, match="syntax"):
        await open_sqlite(tmp_path / "bad.sqlite3", "CREATE TABLE (")
    # aiosqlite serves each connection on a thread of its own: none is left behind
    leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for t in leftover:
        t.join(timeout=5)
    assert not [t for t in leftover if t.is_alive()]
