"""Per-chat settings, chosen by a chat's admins (`/settings language en`), kept in SQLite.

A chat is a Discord server (or DM) or a Telegram group (or private chat): one setting applies
to everyone in it, so a group reads one language whatever each member's app is set to.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

import aiosqlite

from retrieval.i18n import Lang
from retrieval.sqlite import open_sqlite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bot_chat_settings (
    platform TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    language TEXT NOT NULL CHECK (language IN ('zh', 'en')),
    set_by TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (platform, chat_id)
)
"""


class ChatSettings:
    """`async with ChatSettings(db_path, default="zh") as chats:`; reads are cached."""

    def __init__(self, db_path: Path, default: Lang = "zh") -> None:
        self._db_path = Path(db_path)
        self.default: Lang = default
        self._db: aiosqlite.Connection | None = None
        self._languages: dict[tuple[str, str], Lang] = {}

    async def __aenter__(self) -> ChatSettings:
        db = await open_sqlite(self._db_path, _SCHEMA)
        try:
            async with db.execute("SELECT platform, chat_id, language FROM bot_chat_settings") as c:
                async for platform, chat_id, language in c:
                    self._languages[(platform, chat_id)] = "en" if language == "en" else "zh"
        except BaseException:
            await db.close()
            raise
        self._db = db
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def language(self, platform: str, chat_id: str) -> Lang:
        """The chat's language: its setting, else `DEFAULT_LANGUAGE`."""
        return self._languages.get((platform, chat_id), self.default)

    async def set_language(self, platform: str, chat_id: str, lang: Lang, set_by: str) -> None:
        if self._db is None:
            raise RuntimeError("ChatSettings is not open: use `async with ChatSettings(...)`")
        await self._db.execute(
            "INSERT INTO bot_chat_settings (platform, chat_id, language, set_by, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, chat_id) DO UPDATE SET "
            "language = excluded.language, set_by = excluded.set_by, "
            "updated_at = excluded.updated_at",
            (platform, chat_id, lang, set_by, datetime.now(UTC).isoformat(timespec="seconds")),
        )
        await self._db.commit()
        self._languages[(platform, chat_id)] = lang
