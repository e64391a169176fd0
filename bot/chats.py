"""Per-chat settings, chosen by a chat's admins (`/settings language en`, `/settings script
traditional`), kept in SQLite.

A chat is a Discord server (or DM) or a Telegram group (or private chat): one setting applies
to everyone in it, so a group reads one language whatever each member's app is set to.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Self

import aiosqlite

from kernel.i18n import Lang
from retrieval.lifecycle import Closing
from retrieval.requests import Script
from retrieval.sqlite import open_sqlite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bot_chat_settings (
    platform TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    language TEXT NOT NULL CHECK (language IN ('zh', 'en')),
    set_by TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (platform, chat_id)
);
CREATE TABLE IF NOT EXISTS bot_chat_scripts (
    platform TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    script TEXT NOT NULL CHECK (script IN ('simplified', 'traditional')),
    set_by TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (platform, chat_id)
)
"""


class ChatSettings(Closing):
    """`async with ChatSettings(db_path, default="zh") as chats:`; reads are cached."""

    def __init__(self, db_path: Path, default: Lang = "zh") -> None:
        self._db_path = Path(db_path)
        self.default: Lang = default
        self._db: aiosqlite.Connection | None = None
        self._languages: dict[tuple[str, str], Lang] = {}
        self._scripts: dict[tuple[str, str], Script] = {}

    async def __aenter__(self) -> Self:
        self._db = db = await open_sqlite(self._db_path, _SCHEMA)
        try:
            async with db.execute("SELECT platform, chat_id, language FROM bot_chat_settings") as c:
                async for platform, chat_id, language in c:
                    self._languages[(platform, chat_id)] = "en" if language == "en" else "zh"
            async with db.execute("SELECT platform, chat_id, script FROM bot_chat_scripts") as c:
                async for platform, chat_id, script in c:
                    self._scripts[(platform, chat_id)] = (
                        "traditional" if script == "traditional" else "simplified"
                    )
        except BaseException:  # half-open: `close` releases it, as at the end of `async with`
            await self.close()
            raise
        return self

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def language(self, platform: str, chat_id: str) -> Lang:
        """The chat's language: its setting, else `DEFAULT_LANGUAGE`."""
        return self._languages.get((platform, chat_id), self.default)

    async def set_language(self, platform: str, chat_id: str, lang: Lang, set_by: str) -> None:
        await self._save("bot_chat_settings", "language", platform, chat_id, lang, set_by)
        self._languages[(platform, chat_id)] = lang

    async def script(self, platform: str, chat_id: str) -> Script | None:
        """The script the chat chose for scripture (`/cite`); None: it chose none."""
        return self._scripts.get((platform, chat_id))

    async def set_script(self, platform: str, chat_id: str, script: Script, set_by: str) -> None:
        await self._save("bot_chat_scripts", "script", platform, chat_id, script, set_by)
        self._scripts[(platform, chat_id)] = script

    async def _save(
        self, table: str, column: str, platform: str, chat_id: str, value: str, set_by: str
    ) -> None:
        if self._db is None:
            raise RuntimeError("ChatSettings is not open: use `async with ChatSettings(...)`")
        await self._db.execute(
            f"INSERT INTO {table} (platform, chat_id, {column}, set_by, updated_at) "
            f"VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, chat_id) DO UPDATE SET "
            f"{column} = excluded.{column}, set_by = excluded.set_by, "
            "updated_at = excluded.updated_at",
            (platform, chat_id, value, set_by, datetime.now(UTC).isoformat(timespec="seconds")),
        )
        await self._db.commit()
