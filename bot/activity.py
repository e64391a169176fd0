"""When the bot last ran a command, for work that would slow one down.

Background work that holds the GIL for seconds (reading CC-CEDICT backwards for the English
gloss) made a command answered meanwhile take as long again: a million-chunk bot's first `/ask`,
sent as it started. Such work waits with `Activity.quiet` until no command has run for a moment.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator


class Activity:
    """Commands running now, and when the last one ended (on the process's injected clock)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._running = 0
        self._since = monotonic()  # the last change: created, or a command ended

    @contextlib.contextmanager
    def command(self) -> Iterator[None]:
        """Around one command's run."""
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1
            self._since = self._monotonic()

    def quiet_for(self) -> float:
        """Seconds since a command last ran; 0 while one runs."""
        return 0.0 if self._running else max(0.0, self._monotonic() - self._since)

    async def quiet(self, seconds: float, sleep: Callable[[float], Awaitable[object]]) -> None:
        """Return once no command has run for `seconds` (waiting with `sleep`, the clock's)."""
        while (quiet := self.quiet_for()) < seconds:
            await sleep(seconds - quiet)
