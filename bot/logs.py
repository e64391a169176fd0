"""Logging set-up with a filter that scrubs every configured secret from every record."""

from __future__ import annotations

import logging
from collections.abc import Iterable


class SecretScrubber(logging.Filter):
    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = [s for s in secrets if len(s) >= 4]

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        text = record.exc_text or ""
        for secret in self._secrets:
            message = message.replace(secret, "***")
            text = text.replace(secret, "***")
        record.msg, record.args = message, None
        record.exc_text = text or None
        return True


def configure_logging(level: str, secrets: Iterable[str]) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(SecretScrubber(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Libraries that log request URLs (which carry the Telegram token) stay quiet.
    for noisy in ("httpx", "httpcore", "telegram.ext", "discord.http", "jieba"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
