"""The one shape of an ingest failure a person reads: a reason in Chinese and in English."""

from __future__ import annotations


class BilingualError(Exception):
    """A failure said in both languages (`zh`, `en`); `reason` is the one line shown for it."""

    def __init__(self, zh: str, en: str, message: str = "") -> None:
        super().__init__(message or en)
        self.zh = zh
        self.en = en

    @property
    def reason(self) -> str:
        return f"{self.zh} ({self.en})"
