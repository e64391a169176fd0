"""Reply → Discord messages: escaped Markdown pieces of ≤ 2,000 characters, button rows, files.

Every piece of user or corpus text goes through `escape_markdown` and `escape_mentions`;
messages are sent with `AllowedMentions.none()` as well, so nothing in a reply can ping.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

import discord
from discord.utils import escape_markdown, escape_mentions

from bot.render import Show, fit, join_pieces, short_label, split_message
from bot.render.stream import ActionTable
from bot.reply import Block, Reply

LIMIT = 2000
MAX_PIECES = 6  # beyond this the whole text also goes as a .md file and only the start is posted
LABEL_LIMIT = 80
CUSTOM_ID_LIMIT = 100
MAX_BUTTONS = 25

_SOURCES = {"zh": "出处", "en": "Sources"}
_TRUNCATED = {
    "zh": "（全文较长，完整内容见附件。）",
    "en": "(The full text is long; see the attached file.)",
}

NO_MENTIONS = discord.AllowedMentions.none()


@dataclass(slots=True)
class DiscordMessage:
    content: str
    buttons: list[tuple[str, str]] = field(default_factory=list)  # (label, custom_id)
    files: list[tuple[str, bytes]] = field(default_factory=list)  # (filename, data)


def esc(text: str) -> str:
    return escape_mentions(escape_markdown(text))


def _code(text: str) -> str:
    # A fence inside the text would end the block early: a zero-width space after every backtick
    # that starts a run of three defuses it ("````" → "`\u200b`\u200b``", no run of three left).
    return "```\n" + re.sub(r"`(?=``)", "`\u200b", text) + "\n```"


def _quoted(text: str) -> str:
    return "\n".join(f"> {esc(line)}" for line in text.splitlines() or [""])


def _show_for(kind: str) -> Show:
    """How a block's plain text (or any piece of it) is shown: escaped and wrapped whole."""
    if kind == "heading":
        return lambda s: f"**{esc(s)}**"
    if kind == "quote":
        return _quoted
    if kind == "code":
        return _code
    if kind == "item":
        return lambda s: "• " + esc(s).replace("\n", "\n  ")
    if kind == "note":
        return lambda s: f"*{esc(s)}*"
    return esc


def _fit_block(block: Block) -> list[str]:
    """A block as pieces of at most `LIMIT`, each with its whole markup: a long quote goes on
    quoted in the next message, a long note or heading is closed and reopened; an item's
    continuation is indented like its later lines, not a new bullet."""
    pieces = fit(block.text, _show_for(block.kind), LIMIT)
    if block.kind == "item":
        pieces[1:] = ["  " + piece.removeprefix("• ") for piece in pieces[1:]]
    return pieces


def _citation(label: str, quote: str) -> list[str]:
    """【label】 and its quote; a quote too long for one message goes on quoted in the next."""
    head = f"【{esc(label)}】"
    quoted = fit(quote, _quoted, LIMIT - len(head) - 1) if quote else []
    return [head + ("\n" + quoted[0] if quoted else ""), *quoted[1:]]


def sections(reply: Reply) -> list[list[str]]:
    """Each section of a reply as its Markdown parts, in order (a long section has several,
    each at most `LIMIT` and each with its whole markup)."""
    lang = reply.lang
    out = [_fit_block(b) for b in reply.blocks if b.text.strip()]
    if reply.citations:
        out.append([f"**{_SOURCES[lang]}**"])
        out += [_citation(c.label, c.quote) for c in reply.citations]
    if reply.poll:
        poll = reply.poll
        lines = [f"**{esc(poll.question)}**"]
        lines += [f"{i + 1}. {esc(o)}" for i, o in enumerate(poll.labels)]
        out.append(split_message("\n".join(lines), LIMIT))
    return out


def render_text(reply: Reply) -> list[str]:
    """The Markdown sections of a reply, in order (each already within `LIMIT`)."""
    return [part for section in sections(reply) for part in section]


def pack(sections: list[str], limit: int = LIMIT) -> list[str]:
    """Join sections with blank lines into messages of at most `limit` characters; a section
    that is too long by itself is split with `split_message` (citations, fences kept whole)."""
    parts = (
        part
        for section in sections
        for part in (split_message(section, limit) if len(section) > limit else [section])
    )
    return join_pieces(parts, limit)


def _label(text: str) -> str:
    return short_label(text, LABEL_LIMIT)


def buttons(reply: Reply, table: ActionTable | None = None) -> list[tuple[str, str]]:
    """(label, custom_id) for the poll options (numbered) and the reply's buttons."""
    table = table or ActionTable(CUSTOM_ID_LIMIT)
    out: list[tuple[str, str]] = []
    if reply.poll:  # each option's action as the ballot room encoded it
        for i, option in enumerate(reply.poll.options):
            out.append((_label(f"{i + 1}. {option.label}"), table.encode(option.action)))
    out += [(_label(b.label), table.encode(b.action)) for b in reply.buttons]
    return out[:MAX_BUTTONS]


def render(reply: Reply, table: ActionTable | None = None) -> list[DiscordMessage]:
    """The messages to post, in order; buttons ride on the last one, files too."""
    pieces = pack(render_text(reply)) or [""]
    files = [(a.filename, a.data) for a in reply.attachments]
    if len(pieces) > MAX_PIECES:
        files.append(("reply.md", reply.plain().encode()))
        pieces = [*pieces[: MAX_PIECES - 1], f"*{_TRUNCATED[reply.lang]}*"]
    messages = [DiscordMessage(p) for p in pieces]
    messages[-1].buttons = buttons(reply, table)
    messages[-1].files = files[:10]
    return messages


def discord_files(message: DiscordMessage) -> list[discord.File]:
    return [discord.File(io.BytesIO(data), filename=name) for name, data in message.files]
