"""`async with` for everything that holds a connection, a child process or a client.

`Closing` is the one `__aexit__`: however the block ends, `close()` runs. A resource with
nothing to set up at the start inherits `__aenter__` as it is; one that opens something there
overrides it and closes what it opened when opening fails half-way.
"""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self


class Closing(abc.ABC):
    """A resource `async with` closes at the end of the block, whatever ended it."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release what the resource holds."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
