"""The typed reply model every presenter builds and every transport renders.

Presenters (`bot/presenters`, the commands) describe *what* to say (blocks, citations, buttons,
a poll, attachments) from the domain's typed results; the renderers in `bot/render` decide *how*
each platform shows it (Discord Markdown, Telegram HTML, console).
Text inside blocks is plain: renderers escape it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from kernel.i18n import Lang

BlockKind = Literal["heading", "text", "quote", "code", "item", "note"]


@dataclass(frozen=True, slots=True)
class Block:
    text: str
    kind: BlockKind = "text"


@dataclass(frozen=True, slots=True)
class Citation:
    """A verified source shown under an answer: 【label】 and a short quote. `label` is the
    `retrieval.labels.CitationLabel` text in the reply's language — it names the source and
    the place in it, so renderers show it as it is; `source`/`chapter` are for data users."""

    label: str
    source: str
    chapter: str
    quote: str
    chunk_id: str = ""


@dataclass(frozen=True, slots=True)
class Button:
    """A clickable choice. `action` is routed back through the router as an `Action`."""

    label: str
    action: str


@dataclass(frozen=True, slots=True)
class Poll:
    """A ballot: rendered as buttons (Discord, console) or a native poll / keyboard (Telegram).

    Each option is a `Button` whose action the ballot room encoded (`bot.ballot.codec`); a
    renderer shows the labels and puts the actions on its buttons as they are, never encoding
    one itself. A native poll carries only the labels: its answers come back as a
    `bot.registry.PollAnswer` (option indexes), not as actions."""

    question: str
    options: tuple[Button, ...]
    round_id: str = ""  # the round the ballot is for (the posted-ballot hook records it)
    # True: a platform-native poll where the platform has one (Telegram), and no keyboard;
    # False: buttons/keyboard only. Never both: one ballot, one tally.
    native: bool = False

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(o.label for o in self.options)


@dataclass(frozen=True, slots=True)
class Attachment:
    filename: str
    data: bytes
    mime: str = "text/markdown"


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """Immutable: a service builds the whole reply, in one language, at once. Sequences given
    as lists are frozen into tuples."""

    # The language the reply is written in; renderers label sources etc. in it.
    lang: Lang
    blocks: tuple[Block, ...] = ()
    citations: tuple[Citation, ...] = ()
    buttons: tuple[Button, ...] = ()
    poll: Poll | None = None
    attachments: tuple[Attachment, ...] = ()
    # True for refusals and usage errors: rendered the same, but visible only to the caller
    # where the platform allows it (Discord ephemeral).
    is_error: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "blocks", tuple(self.blocks))
        object.__setattr__(self, "citations", tuple(self.citations))
        object.__setattr__(self, "buttons", tuple(self.buttons))
        object.__setattr__(self, "attachments", tuple(self.attachments))

    @classmethod
    def text(cls, *paragraphs: str, lang: Lang, is_error: bool = False) -> Reply:
        return cls(blocks=tuple(Block(p) for p in paragraphs), is_error=is_error, lang=lang)

    @classmethod
    def error(cls, message: str, *, lang: Lang) -> Reply:
        return cls(blocks=(Block(message),), is_error=True, lang=lang)

    def plain(self) -> str:
        """Everything as plain text (logs, tests, the non-interactive CLI)."""
        parts = [b.text for b in self.blocks]
        for c in self.citations:
            parts.append(f"【{c.label}】{c.quote}")
        if self.poll:
            parts.append(self.poll.question)
            parts.extend(f"{i + 1}. {o}" for i, o in enumerate(self.poll.labels))
        parts.extend(f"[{b.label}]" for b in self.buttons)
        parts.extend(f"📎 {a.filename}" for a in self.attachments)
        return "\n\n".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class Posted:
    """What one delivery put in the chat: the messages the transport may edit later (public
    ones, in order; the last carries the buttons), and a native poll if one went out."""

    message_ids: tuple[str, ...] = ()
    poll_id: str = ""
    poll_message_id: str = ""


# A service streams partial text (e.g. an answer being generated) through this callable; the
# transport turns it into throttled message edits. Absent = no streaming.
Progress = Callable[[str], Awaitable[None]]
