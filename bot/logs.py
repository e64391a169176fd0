"""Logging set-up with a filter that scrubs every configured secret from every record.

The console (`baibao chat`) shares the terminal with its replies, so its log goes to a file in
the data directory (`console_log`), never between a reply's lines; every other command logs to
stderr. Libraries that chatter at INFO (matplotlib's font cache, request URLs carrying the
Telegram token) are held to WARNING.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterable
from pathlib import Path

CONSOLE_LOG = "baibao.log"
# Libraries that log request URLs (which carry the Telegram token) or chatter at INFO
# (matplotlib.font_manager while it builds its font cache) stay quiet.
QUIET = ("httpx", "httpcore", "telegram.ext", "discord.http", "jieba", "matplotlib", "PIL")


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


class _LogFile(logging.FileHandler):
    """The console's log file. A record it cannot write (the data directory removed under
    the running console) goes to stderr as its one line, never as a logging traceback."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            super().emit(record)  # opens the file at the first record
        except OSError:
            self.handleError(record)

    def handleError(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            sys.stderr.write(self.format(record) + "\n")


def console_log(data_dir: Path) -> Path:
    """Where the console's log goes: a file in the data directory."""
    return data_dir / CONSOLE_LOG


def configure_logging(level: str, secrets: Iterable[str], *, to_file: Path | None = None) -> None:
    """Every record scrubbed of `secrets`, to stderr, or appended to `to_file` (the console)."""
    handler: logging.Handler
    if to_file is None:
        handler = logging.StreamHandler()
    else:
        to_file.parent.mkdir(parents=True, exist_ok=True)
        handler = _LogFile(to_file, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(SecretScrubber(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in QUIET:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
