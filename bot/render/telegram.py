"""Reply → Telegram HTML messages (parse_mode HTML) of ≤ 4,096 characters, keyboards, files.

Text is split as plain text first and escaped afterwards, so every message carries whole,
balanced tags and a 【…】 citation is never cut.

Telegram counts a message's length after entity parsing, in UTF-16 code units, so a character
outside the Basic Multilingual Plane (CJK Extension B 𠀀, most emoji) counts twice. Every length
here is `units` of the HTML as sent: never less than what Telegram counts (tags and entities
only shrink when parsed), and never less than the code points either.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bot.render import fit as fit_shown
from bot.render import fitting, join_pieces, short_label
from bot.render.stream import ActionTable
from bot.reply import Block, Reply

LIMIT = 4096
MAX_PIECES = 6
CALLBACK_LIMIT = 64  # bytes of callback_data
LABEL_LIMIT = 64
POLL_QUESTION_LIMIT = 300
POLL_OPTION_LIMIT = 100
# Attachments Telegram shows inline as a photo (sendPhoto takes these); any other goes as a file.
PHOTO_MIMES = frozenset({"image/png", "image/jpeg", "image/webp"})

_SOURCES = {"zh": "出处", "en": "Sources"}
_TRUNCATED = {
    "zh": "（全文较长，完整内容见附件。）",
    "en": "(The full text is long; see the attached file.)",
}


@dataclass(slots=True)
class TelegramMessage:
    html: str
    keyboard: InlineKeyboardMarkup | None = None


@dataclass(slots=True)
class TelegramReply:
    messages: list[TelegramMessage]
    files: list[tuple[str, bytes]] = field(default_factory=list)  # documents
    photos: list[tuple[str, bytes]] = field(default_factory=list)  # shown inline (by MIME type)
    # A native poll to send after the messages: (question, options)
    poll: tuple[str, list[str]] | None = None


def esc(text: str) -> str:
    return html.escape(text, quote=False)


def units(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts it."""
    return len(text.encode("utf-16-le")) // 2


Wrap = Callable[[str], str]


def _wrap_for(block: Block) -> Wrap:
    if block.kind == "heading":
        return lambda s: f"<b>{s}</b>"
    if block.kind == "quote":
        return lambda s: f"<blockquote>{s}</blockquote>"
    if block.kind == "code":
        return lambda s: f"<pre>{s}</pre>"
    if block.kind == "item":
        return lambda s: "• " + s
    if block.kind == "note":
        return lambda s: f"<i>{s}</i>"
    return lambda s: s


def fit(text: str, wrap: Wrap, limit: int = LIMIT, budget: int | None = None) -> list[str]:
    """Plain `text` → escaped, wrapped pieces of at most `limit` units each."""
    return fit_shown(text, lambda s: wrap(esc(s)), limit, units, budget)


def sections(reply: Reply) -> list[list[str]]:
    """Each section as its already-fitted HTML parts (a long section has several)."""
    out: list[list[str]] = []
    for block in reply.blocks:
        if block.text.strip():
            out.append(fit(block.text, _wrap_for(block)))
    if reply.citations:
        out.append([f"<b>{_SOURCES[reply.lang]}</b>"])
        for c in reply.citations:
            head = f"【{esc(c.label)}】"
            quote = fit(c.quote, lambda s: f"<blockquote>{s}</blockquote>", LIMIT - units(head) - 1)
            out.append([head + ("\n" + quote[0] if quote else ""), *quote[1:]])
    if reply.poll:
        lines = [f"<b>{esc(reply.poll.question)}</b>"]
        lines += [f"{i + 1}. {esc(o)}" for i, o in enumerate(reply.poll.labels)]
        out.append(fit_lines(lines))
    return out


def fit_lines(lines: list[str], limit: int = LIMIT) -> list[str]:
    """Already-escaped lines → pieces of at most `limit` units (lines kept whole)."""
    pieces: list[str] = []
    current = ""
    for line in lines:
        line = line[: fitting(line, limit, units)]
        if current and units(current) + 1 + units(line) > limit:
            pieces.append(current)
            current = line
        else:
            current = f"{current}\n{line}" if current else line
    if current:
        pieces.append(current)
    return pieces


def pack(parts: list[list[str]], limit: int = LIMIT) -> list[str]:
    return join_pieces((part for section in parts for part in section), limit, units)


def _label(text: str) -> str:
    return short_label(text, LABEL_LIMIT)


def native_poll(reply: Reply) -> bool:
    """The ballot goes out as Telegram's own poll (else as keyboard buttons) — never both, so
    there is one ballot and one count. The ballot's owner decided which (`Poll.native`, set
    within Telegram's 2–12 options by `bot.ballot.native_ballot`): the help text it wrote
    matches only what it decided, so the renderer follows it and never re-decides."""
    return reply.poll is not None and reply.poll.native


def keyboard(reply: Reply, table: ActionTable) -> InlineKeyboardMarkup | None:
    """One button per row: the ballot's options (unless it is a native poll) and buttons."""
    rows: list[list[InlineKeyboardButton]] = []
    if reply.poll and not native_poll(reply):  # each option's action as the ballot room encoded it
        for i, option in enumerate(reply.poll.options):
            data = table.encode(option.action)
            label = _label(f"{i + 1}. {option.label}")
            rows.append([InlineKeyboardButton(label, callback_data=data)])
    for button in reply.buttons:
        data = table.encode(button.action)
        rows.append([InlineKeyboardButton(_label(button.label), callback_data=data)])
    return InlineKeyboardMarkup(rows) if rows else None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(reply: Reply, table: ActionTable | None = None) -> TelegramReply:
    table = table or ActionTable(CALLBACK_LIMIT)
    pieces = pack(sections(reply)) or []
    files = [(a.filename, a.data) for a in reply.attachments if a.mime not in PHOTO_MIMES]
    photos = [(a.filename, a.data) for a in reply.attachments if a.mime in PHOTO_MIMES]
    if len(pieces) > MAX_PIECES:
        files.append(("reply.md", reply.plain().encode()))
        pieces = [*pieces[: MAX_PIECES - 1], f"<i>{_TRUNCATED[reply.lang]}</i>"]
    if not pieces and not files and not photos:
        pieces = ["…"]
    messages = [TelegramMessage(p) for p in pieces]
    markup = keyboard(reply, table)
    if markup is not None:
        if not messages:
            messages.append(TelegramMessage("…"))
        messages[-1].keyboard = markup
    poll = None
    if reply.poll and native_poll(reply):
        poll = (
            _clip(reply.poll.question, POLL_QUESTION_LIMIT),
            [_clip(o, POLL_OPTION_LIMIT) for o in reply.poll.labels],
        )
    return TelegramReply(messages, files, photos, poll)


def plain_preview(text: str, limit: int = LIMIT) -> str:
    """A partial (streamed) plain text → escaped HTML that fits one message."""
    if units(text) > limit - 1:
        text = text[: fitting(text, limit - 1, units)] + "…"
    rendered = esc(text)
    while units(rendered) > limit:
        text = text[: len(text) * 9 // 10] + "…"
        rendered = esc(text)
    return rendered
