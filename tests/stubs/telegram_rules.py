"""What the loopback Bot API (`telegram_server.py`) checks, apart from its state: how Telegram
reads a request's parameters, its HTML, its keyboards, and its flood limits.

The rules and the error descriptions follow the Bot API server (tdlib/telegram-bot-api,
`telegram-bot-api/Client.cpp`): `get_formatted_text` (parse_mode), `get_input_message_text`,
`get_reply_markup` / `get_inline_keyboard_button`, `get_link_preview_options`,
`check_message_topic` (message_thread_id), `get_chat_action`, `get_bot_commands`,
`fail_query_with_error` (how a description is prefixed and capitalised).

Where Telegram would read a malformed value silently (an unknown parameter is ignored, a
boolean "True" reads as false, an integer "abc" as 0), the stub refuses with a `StubGap`: the
product almost certainly meant something else, and Telegram would not say so.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any


class BotAPIError(Exception):
    """A refusal as Telegram answers it: `{"ok": false, "error_code", "description",
    "parameters"?}`."""

    def __init__(self, code: int, description: str, **parameters: Any) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters


class StubGap(BotAPIError):
    """A request Telegram would accept without complaint but that cannot be what the product
    meant (or that the stub cannot judge): refused, so the test fails."""

    def __init__(self, description: str) -> None:
        super().__init__(400, f"Bad Request: [stub] {description}")


def bad_request(description: str) -> BotAPIError:
    return BotAPIError(400, f"Bad Request: {description}")


def too_many_requests(retry_after: int) -> BotAPIError:
    return BotAPIError(
        429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after
    )


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


# ---- Telegram's HTML (https://core.telegram.org/bots/api#html-style) ------------------------

_TAGS = {
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "span",
    "tg-spoiler",
    "a",
    "tg-emoji",
    "code",
    "pre",
    "blockquote",
}
_ENTITY = re.compile(r"&(#\d+|#x[0-9a-fA-F]+|lt|gt|amp|quot);")
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[^<>]*)?)\s*>")


def _offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))


def parse_html(text: str) -> str:
    """The message as Telegram shows it (tags removed, entities decoded), or the error Telegram
    answers for HTML it cannot parse."""
    out: list[str] = []
    stack: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "<":
            m = _TAG.match(text, i)
            if m is None:
                raise bad_request(
                    "can't parse entities: Unexpected end of name token at byte offset "
                    f"{_offset(text, i)}"
                )
            closing, name, attrs = m.group(1), m.group(2).lower(), m.group(3)
            if name not in _TAGS:
                raise bad_request(
                    f'can\'t parse entities: Unsupported start tag "{name}" at byte offset '
                    f"{_offset(text, i)}"
                )
            if closing:
                if not stack or stack[-1] != name:
                    raise bad_request(
                        f"can't parse entities: Unexpected end tag at byte offset {_offset(text, i)}"
                    )
                stack.pop()
            else:
                if name == "a" and "href=" not in attrs:
                    raise bad_request("can't parse entities: Can't find href in a tag")
                stack.append(name)
            i = m.end()
        elif ch == "&":
            m = _ENTITY.match(text, i)
            if m is None:
                raise bad_request(
                    "can't parse entities: Unsupported HTML entity at byte offset "
                    f"{_offset(text, i)}"
                )
            out.append({"lt": "<", "gt": ">", "amp": "&", "quot": '"'}.get(m.group(1), "?"))
            i = m.end()
        else:
            out.append(ch)
            i += 1
    if stack:
        raise bad_request(
            f"can't parse entities: Can't find end tag corresponding to start tag \"{stack[-1]}\""
        )
    return "".join(out)


def formatted(text: str, parse_mode: str) -> str:
    """`get_formatted_text`: the text as shown. Telegram lower-cases the mode; "" and "none"
    mean plain text; Markdown and MarkdownV2 exist, but this stub parses only HTML (the bot
    sends nothing else), so it refuses them rather than pass what it cannot check."""
    if len(text.encode("utf-8")) > 1 << 15:
        raise bad_request("text is too long")
    mode = parse_mode.lower()
    if not text or mode in ("", "none"):
        return text
    if mode == "html":
        return parse_html(text)
    if mode in ("markdown", "markdownv2"):
        raise StubGap(f"parse_mode {parse_mode!r}: this stub parses only HTML")
    raise bad_request("unsupported parse_mode")


# ---- parameters -------------------------------------------------------------------------------

_BOOLEANS = {"true", "false", "1", "0", "yes", "no"}


@dataclass
class Args:
    """One request's parameters as the Bot API server reads them (every value a string; files
    apart), for the method named."""

    method: str
    raw: dict[str, str]
    files: dict[str, bytes] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        return self.raw.get(name, "") != ""

    def text(self, name: str) -> str:
        return self.raw.get(name, "")

    def integer(self, name: str, default: int = 0) -> int:
        value = self.text(name).strip()
        if not value:
            return default
        if not re.fullmatch(r"-?\d+", value):
            raise StubGap(f"{name}={value!r} is not an integer (Telegram would read it as 0)")
        return int(value)

    def boolean(self, name: str, default: bool = False) -> bool:
        value = self.text(name).strip().lower()
        if not value:
            return default
        if value not in _BOOLEANS:
            raise StubGap(f"{name}={value!r} is not a boolean (Telegram would read it as false)")
        return value in ("true", "1", "yes")

    def json(self, name: str, what: str) -> Any:
        value = self.text(name)
        if not value:
            return None
        try:
            return json.loads(value)
        except ValueError:
            raise bad_request(f"can't parse {what} JSON object") from None

    def file(self, name: str) -> bytes | None:
        """An uploaded file (`attach://name` in multipart), else None."""
        ref = self.text(name)
        if ref.startswith("attach://"):
            return self.files.get(ref.removeprefix("attach://"))
        return None


def message_text(args: Args, name: str = "text", *, limit: int, too_long: str) -> str:
    """`get_input_message_text` + the length Telegram allows: the text as shown."""
    raw = args.text(name)
    if not raw:
        raise bad_request("message text is empty" if name == "text" else f"{name} is empty")
    link_preview_options(args)
    shown = formatted(raw, args.text("parse_mode"))
    if not shown.strip():
        raise bad_request("message text is empty")
    if len(shown) > limit or utf16_len(shown) > limit:  # code points and UTF-16 units
        raise bad_request(too_long)
    return shown


def caption(args: Args, limit: int) -> str:
    if not args.has("caption"):
        args.text("parse_mode")
        return ""
    shown = formatted(args.text("caption"), args.text("parse_mode"))
    if len(shown) > limit or utf16_len(shown) > limit:
        raise bad_request("message caption is too long")
    return shown


def link_preview_options(args: Args) -> None:
    if not args.has("link_preview_options"):
        args.boolean("disable_web_page_preview")
        return
    value = args.json("link_preview_options", "link preview options")
    if not isinstance(value, dict):
        raise bad_request("object expected as link preview options")
    for key, item in value.items():
        if key not in (
            "is_disabled",
            "url",
            "prefer_small_media",
            "prefer_large_media",
            "show_above_text",
        ):
            raise StubGap(f"link_preview_options has no field {key!r}")
        kind, name = (str, "String") if key == "url" else (bool, "Boolean")
        if not isinstance(item, kind):
            raise bad_request(f'field "{key}" must be of type {name}')


def reply_markup(args: Args, callback_limit: int) -> Any:
    """`get_reply_markup` for the inline keyboards the bot sends; None when absent."""
    markup = args.json("reply_markup", "reply keyboard markup")
    if markup is None:
        return None
    if not isinstance(markup, dict):
        raise bad_request("object expected as reply markup")
    if set(markup) - {"inline_keyboard"}:
        raise StubGap(f"reply_markup fields {sorted(set(markup) - {'inline_keyboard'})}")
    rows = markup.get("inline_keyboard", [])
    if not isinstance(rows, list):
        raise bad_request('field "inline_keyboard" must be of type Array')
    for row in rows:
        if not isinstance(row, list):
            raise bad_request(
                'field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays'
            )
        for button in row:
            _inline_button(button, callback_limit)
    return markup


def _inline_button(button: Any, callback_limit: int) -> None:
    prefix = "can't parse inline keyboard button: "
    if not isinstance(button, dict):
        raise bad_request(prefix + "InlineKeyboardButton must be an Object")
    if "text" not in button:
        raise bad_request(prefix + 'Can\'t find field "text"')
    if not isinstance(button["text"], str):
        raise bad_request(prefix + 'Field "text" must be of type String')
    if not button["text"]:
        raise bad_request("BUTTON_TEXT_INVALID")
    if set(button) - {"text", "callback_data", "url"}:
        raise StubGap(
            f"inline button fields {sorted(set(button) - {'text', 'callback_data', 'url'})}"
        )
    data = button.get("callback_data", "")
    if not isinstance(data, str):
        raise bad_request(prefix + 'Field "callback_data" must be of type String')
    if not data and not button.get("url"):
        raise bad_request(prefix + "Text buttons are unallowed in the inline keyboard")
    if len(data.encode("utf-8")) > callback_limit:
        raise bad_request("BUTTON_DATA_INVALID")


CHAT_ACTIONS = {
    "cancel",
    "typing",
    "record_video",
    "upload_video",
    "record_audio",
    "record_voice",
    "upload_audio",
    "upload_voice",
    "upload_photo",
    "upload_document",
    "choose_sticker",
    "pick_up_location",
    "find_location",
    "record_video_note",
    "upload_video_note",
}


def bot_commands(args: Args) -> list[dict[str, str]]:
    """`get_bot_commands` and the limits Telegram's server applies to them."""
    value = args.json("commands", "commands")
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad_request("expected an Array of BotCommand")
    if len(value) > 100:
        raise bad_request("BOT_COMMANDS_TOO_MUCH")
    for command in value:
        if not isinstance(command, dict):
            raise bad_request("can't parse BotCommand: expected an Object")
        for key in ("command", "description"):
            if not isinstance(command.get(key), str):
                raise bad_request(f'can\'t parse BotCommand: Field "{key}" must be of type String')
        if not re.fullmatch(r"[a-z0-9_]{1,32}", command["command"]):
            raise bad_request("BOT_COMMAND_INVALID")
        if not 1 <= len(command["description"]) <= 256:
            raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
    return value


def language_code(args: Args) -> str:
    code = args.text("language_code")
    if code and not re.fullmatch(r"[a-z]{2}", code):
        raise bad_request("LANG_CODE_INVALID")
    return code


# ---- flood control ------------------------------------------------------------------------------

# Methods that post or change a message: what the limits count.
MESSAGE_METHODS = {
    "sendMessage",
    "editMessageText",
    "sendDocument",
    "sendPhoto",
    "sendPoll",
    "stopPoll",
}


class FloodModel:
    """Telegram's published limits (core.telegram.org/bots/faq): about one message a second
    in a chat with short bursts, 20 a minute in a group, 30 a second in all. Modelled as
    sliding windows over the accepted message requests (`MESSAGE_METHODS`), by arrival time.
    A request that would exceed one is refused 429 with `retry_after`: the whole seconds until
    it would fit."""

    # (requests, in any so many seconds, counted over): the chat, a group (negative id), the bot
    WINDOWS = ((3, 3.0, "chat"), (20, 60.0, "group"), (30, 1.0, "bot"))

    def __init__(self) -> None:
        self.accepted: list[tuple[float, int]] = []  # (arrival, chat id)

    def retry_after(self, chat_id: int, now: float) -> int | None:
        waits = []
        for count, seconds, scope in self.WINDOWS:
            if scope == "group" and chat_id > 0:
                continue
            recent = [
                at
                for at, chat in self.accepted
                if at > now - seconds and (scope == "bot" or chat == chat_id)
            ]
            if len(recent) >= count:
                waits.append(recent[len(recent) - count] + seconds - now)
        if not waits:
            return None
        return max(1, math.ceil(max(waits) - 1e-9))

    def accept(self, chat_id: int, now: float) -> None:
        self.accepted.append((now, chat_id))
