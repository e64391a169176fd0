"""The one shape of an ingest failure a person reads: a reason in Chinese and in English."""

from __future__ import annotations

from typing import Any


class BilingualError(Exception):
    """A failure said in both languages (`zh`, `en`); `reason` is the one line shown for it.

    It pickles as itself, subclasses too whatever their constructor takes: a file's refusal
    raised in the reading process (`ingest.read_process`) reaches the user as it was raised."""

    def __init__(self, zh: str, en: str, message: str = "") -> None:
        super().__init__(message or en)
        self.zh = zh
        self.en = en

    @property
    def reason(self) -> str:
        return f"{self.zh} ({self.en})"

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(
    cls: type[BilingualError], args: tuple[Any, ...], state: dict[str, Any]
) -> BilingualError:
    """An unpickled `BilingualError`: its class, its message and its fields, without calling
    a constructor whose arguments are not what `args` holds."""
    error = cls.__new__(cls, *args)
    error.__dict__.update(state)
    return error
