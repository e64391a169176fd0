"""The writers' room's user-facing strings (`bot/catalogs/novel.toml`): Simplified Chinese first,
English second."""

from __future__ import annotations

from bot.i18n import catalog

T = catalog("novel")
