"""Typed requests the router hands to the services (after parsing and validation)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Script = Literal["simplified", "traditional"]
# What a user may type for a script (the /cite option, `/settings script`).
SCRIPT_NAMES: dict[str, Script] = {
    "简体": "simplified",
    "繁体": "traditional",
    "simplified": "simplified",
    "traditional": "traditional",
}


@dataclass(frozen=True, slots=True)
class AskRequest:
    question: str
    filters: dict[str, str] = field(default_factory=dict)
    # The script Bible text is quoted in (ministry passages are quoted as written); None =
    # Traditional when the question is written in Traditional, else Simplified. The chat's
    # `/settings script` fills it in (`bot.commands.scholar`), as for `/cite`.
    script: Script | None = None
    # The asker's shelf (a namespace, `retrieval.library`; "" for none): the library read is
    # the shared library plus that shelf. The chat layer fills it in.
    shelf: str = ""


@dataclass(frozen=True, slots=True)
class CiteRequest:
    """`refs` are OSIS ranges from the one scripture parser: (start, end), e.g.
    ("Eph.1.10", "Eph.1.12"); `text` is what the user typed (echoed in the reply)."""

    text: str
    refs: tuple[tuple[str, str], ...]
    # The script the verse is shown in; None = Traditional when `text` is written in
    # Traditional characters, else Simplified. The chat's `/settings script traditional`
    # fills it in when the user gave no script option (`bot.commands.scholar`).
    script: Script | None = None
    # A long passage is shown a page at a time (`retrieval.scholar.PAGE_VERSES`): this one
    # (1-based).
    page: int = 1
    shelf: str = ""  # as for `AskRequest`
