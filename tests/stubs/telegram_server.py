"""A loopback Telegram Bot API server (aiohttp) for python-telegram-bot's own `HTTPXRequest`.

The transport under test is configured exactly as in production, only with
`TELEGRAM_API_BASE=<server.api_base>`: PTB builds every request, sends it over real HTTP
(form-encoded, or multipart with file uploads) and parses the answers. Updates reach the bot the
only way they reach a polling bot: `getUpdates` long polling. A test queues an update with
`server.push_*`; the pending `getUpdates` returns it at once.

The server checks what the client sends and answers like the Bot API does, with its error bodies
(`{"ok": false, "error_code": …, "description": "…"}`):

- the token in the path (401 Unauthorized for another token, 404 Not Found for none);
- unknown methods (404 Not Found) — every method the bot may call is listed in `_METHODS`;
- chat ids (400 "Bad Request: chat not found" for a chat the bot was never in);
- message text: empty, longer than 4096 characters after entity parsing (UTF-16 units, as
  Telegram counts), and HTML that does not parse ("Bad Request: can't parse entities: …");
- inline keyboards: callback_data of 1–64 bytes ("Bad Request: BUTTON_DATA_INVALID");
- editMessageText of a message that does not exist ("message to edit not found") or with the
  same content ("message is not modified");
- answerCallbackQuery: an unknown or already answered query ("query is too old …");
- sendPoll / sendDocument / setMyCommands field limits; flood control on request (`flood`).

Every request is recorded as a `Call` (method, decoded parameters, uploaded files); `wait_for`
waits on a condition, never on time.

    async with TelegramServer(token="123:TEST") as server:
        settings = load_settings(telegram_token=server.token, telegram_api_base=server.api_base)
        async with TelegramTransport(router, settings) as transport:
            server.push_command("/ask 什么是经纶？")
            [sent] = await server.wait_for("sendMessage")
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web

BOT_ID = 777000
BOT_USERNAME = "baibao_bot"
# The placeholder senders Telegram puts in `from` of a message sent on behalf of a chat.
GROUP_ANONYMOUS_BOT = {
    "id": 1087968824,
    "is_bot": True,
    "first_name": "Group",
    "username": "GroupAnonymousBot",
}
CHANNEL_BOT = {"id": 136817688, "is_bot": True, "first_name": "Channel", "username": "Channel_Bot"}
TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024
CALLBACK_DATA_LIMIT = 64
CALLBACK_ANSWER_LIMIT = 200

# Every Bot API method the bot may call. Anything else is answered 404, as Telegram does.
_METHODS = {
    "getMe",
    "getUpdates",
    "deleteWebhook",
    "setMyCommands",
    "deleteMyCommands",
    "getMyCommands",
    "sendMessage",
    "editMessageText",
    "editMessageReplyMarkup",
    "deleteMessage",
    "sendChatAction",
    "sendDocument",
    "sendPhoto",
    "sendPoll",
    "stopPoll",
    "answerCallbackQuery",
    "getChat",
    "getChatMember",
    "getChatAdministrators",
    "getFile",
    "close",
    "logOut",
}


# Update kinds Telegram only sends when allowed_updates names them.
_NOT_BY_DEFAULT = {"chat_member", "message_reaction", "message_reaction_count"}


class BotAPIError(Exception):
    def __init__(self, code: int, description: str, **parameters: Any) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters


def bad_request(description: str) -> BotAPIError:
    return BotAPIError(400, f"Bad Request: {description}")


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    status: int = 200
    error: str = ""  # the description of an error answer
    expected: bool = False  # injected by the test (flood, fail) or taken by expect_errors()


@dataclass
class SentMessage:
    chat_id: int
    message_id: int
    text: str
    markup: Any = None


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


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


# ---- the server -------------------------------------------------------------------------------


class TelegramServer:
    """aiohttp on 127.0.0.1, a free port; an async context manager."""

    def __init__(self, token: str = "123456:TEST-token") -> None:
        self.token = token
        self.calls: list[Call] = []
        self.files: dict[str, bytes] = {}  # file_id → content (getFile + download)
        self.member_status: dict[tuple[int, int], str] = {}  # (chat, user) → status
        self.chats: dict[int, dict[str, Any]] = {}  # chats the bot is in
        self.messages: dict[tuple[int, int], SentMessage] = {}
        self.polls: dict[str, tuple[int, int]] = {}  # poll id → (chat, message id)
        self.stopped_polls: set[str] = set()  # stopPoll closed them: no more answers
        self.failures: dict[str, list[BotAPIError]] = {}  # method → errors answered first
        self._updates: list[dict[str, Any]] = []
        # Telegram remembers the last allowed_updates; by default it never sends these kinds.
        self._allowed: set[str] | None = None
        self._polls_started = 0
        self.waiting_polls = 0  # getUpdates requests held open right now
        self._closing = False
        self._open_queries: set[str] = set()
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ---- addresses --------------------------------------------------------------------------

    @property
    def api_base(self) -> str:
        """For `TELEGRAM_API_BASE` (the transport appends the token and the method)."""
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def file_base(self) -> str:
        """PTB's `base_file_url` (what the transport derives from TELEGRAM_API_BASE)."""
        return f"http://127.0.0.1:{self.port}/file/bot"

    async def __aenter__(self) -> TelegramServer:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing = True  # pending long polls end now, not after their timeout
        async with self._changed:
            self._changed.notify_all()
        if self._runner is not None:
            await self._runner.cleanup()

    # ---- what a test does -------------------------------------------------------------------

    def named(self, method: str) -> list[Call]:
        """Successful calls of `method`, in order."""
        return [c for c in self.calls if c.method == method and c.status == 200]

    def errors(self) -> list[Call]:
        """Calls the server refused: a correct transport makes none it was not told to expect."""
        return [c for c in self.calls if c.status != 200]

    def expect_errors(self) -> list[Call]:
        """The refusals so far that the test provoked on purpose (the fixture stops counting
        them against the test)."""
        taken = [c for c in self.errors() if not c.expected]
        for call in taken:
            call.expected = True
        return taken

    def texts(self) -> str:
        """Every text the bot sent or edited into a chat, in order, one per line."""
        calls = [c for c in self.calls if c.status == 200]
        return "\n".join(
            str(c.params.get("text", ""))
            for c in calls
            if c.method in ("sendMessage", "editMessageText")
        )

    async def wait_for(
        self, method: str, count: int = 1, where: Callable[[Call], bool] = lambda c: True
    ) -> list[Call]:
        """Wait until `count` successful calls of `method` matching `where` were answered."""

        def found() -> list[Call]:
            return [c for c in self.named(method) if where(c)]

        async with asyncio.timeout(60):  # a hang guard, not a time limit under test
            async with self._changed:
                await self._changed.wait_for(lambda: len(found()) >= count)
        return found()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(60), self._changed:
            await self._changed.wait_for(predicate)

    def flood(self, method: str, retry_after: int = 1) -> None:
        """The next `method` call is refused by flood control (429 with retry_after)."""
        self.failures.setdefault(method, []).append(
            BotAPIError(
                429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after
            )
        )

    def fail(self, method: str, code: int, description: str) -> None:
        """The next `method` call gets this error answer."""
        self.failures.setdefault(method, []).append(BotAPIError(code, description))

    def join(self, chat_id: int, title: str = "读经小组") -> dict[str, Any]:
        chat: dict[str, Any]
        if chat_id > 0:
            chat = {"id": chat_id, "type": "private", "first_name": "林远"}
        else:
            chat = {"id": chat_id, "type": "supergroup", "title": title}
        self.chats[chat_id] = chat
        return chat

    def push(self, update: dict[str, Any]) -> dict[str, Any]:
        """Queue a raw update (an `update_id` is assigned); returns it."""
        update = {"update_id": next(self._update_ids), **update}
        self._updates.append(update)
        self._notify()
        return update

    def push_message(
        self,
        text: str,
        *,
        chat_id: int = 42,
        user_id: int = 42,
        lang: str | None = "zh-hans",
        name: str = "林远",
        **extra: Any,
    ) -> dict[str, Any]:
        message = self._incoming(chat_id, user_id, lang, name)
        message["text"] = text
        if text.startswith("/"):
            head = text.split(maxsplit=1)[0]
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": utf16_len(head)}]
        message.update(extra)
        return self.push({"message": message})

    push_command = push_message

    def push_as_chat(
        self, text: str, *, chat_id: int, channel_id: int | None = None, **extra: Any
    ) -> dict[str, Any]:
        """A message sent on behalf of a chat, as Telegram delivers it. Without `channel_id`: an
        anonymous administrator of the group (`from` GroupAnonymousBot, `sender_chat` the group
        itself). With it: a post on behalf of that channel (`from` Channel_Bot, `sender_chat`
        the channel)."""
        group = self.chats.get(chat_id) or self.join(chat_id)
        if channel_id is None:
            sender, sender_chat = GROUP_ANONYMOUS_BOT, group
        else:
            channel = {"id": channel_id, "type": "channel", "title": "读经频道"}
            sender, sender_chat = CHANNEL_BOT, channel
        message = self._incoming(chat_id, 0, None, "")
        message.update({"from": dict(sender), "sender_chat": dict(sender_chat), "text": text})
        if channel_id is None:
            message["author_signature"] = "管理员"  # the admin's custom title, if any
        if text.startswith("/"):
            head = text.split(maxsplit=1)[0]
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": utf16_len(head)}]
        message.update(extra)
        return self.push({"message": message})

    def push_document(
        self,
        caption: str,
        content: bytes,
        *,
        file_name: str = "blueprint.json",
        mime_type: str = "application/json",
        declared_size: int | None = None,
        chat_id: int = 42,
        user_id: int = 42,
        lang: str | None = "zh-hans",
    ) -> dict[str, Any]:
        file_id = f"file{next(self._ids)}"
        self.files[file_id] = content
        message = self._incoming(chat_id, user_id, lang, "林远")
        message["caption"] = caption
        if caption.startswith("/"):
            head = caption.split(maxsplit=1)[0]
            message["caption_entities"] = [
                {"type": "bot_command", "offset": 0, "length": utf16_len(head)}
            ]
        message["document"] = {
            "file_id": file_id,
            "file_unique_id": f"u-{file_id}",
            "file_name": file_name,
            "mime_type": mime_type,
            "file_size": len(content) if declared_size is None else declared_size,
        }
        return self.push({"message": message})

    def push_callback(
        self,
        data: str,
        *,
        message: SentMessage | None = None,
        user_id: int = 42,
        lang: str | None = "zh-hans",
    ) -> dict[str, Any]:
        """A press on a button of `message` (default: the last message the bot sent)."""
        sent = message or list(self.messages.values())[-1]
        query_id = f"cq{next(self._ids)}"
        self._open_queries.add(query_id)
        return self.push(
            {
                "callback_query": {
                    "id": query_id,
                    "from": self._user(user_id, lang, "林远"),
                    "chat_instance": f"ci{sent.chat_id}",
                    "data": data,
                    "message": {
                        "message_id": sent.message_id,
                        "date": int(time.time()),
                        "chat": self.chats[sent.chat_id],
                        "from": self._bot_user(),
                        "text": parse_html(sent.text),
                    },
                }
            }
        )

    def push_poll_answer(
        self, poll_id: str, options: list[int], *, user_id: int = 42, lang: str | None = "zh-hans"
    ) -> dict[str, Any]:
        if poll_id not in self.polls:
            raise AssertionError(f"the bot never sent poll {poll_id!r}")
        if poll_id in self.stopped_polls:
            raise AssertionError(f"poll {poll_id!r} was stopped: Telegram sends no answers")
        return self.push(
            {
                "poll_answer": {
                    "poll_id": poll_id,
                    "user": self._user(user_id, lang, "林远"),
                    "option_ids": options,
                    "option_persistent_ids": [f"p{o}" for o in options],
                }
            }
        )

    def push_chat_member(
        self, chat_id: int, user_id: int, old: str, new: str, *, by: int = 1
    ) -> dict[str, Any]:
        """A member's status changed (promoted, demoted …); also updates `member_status`."""
        self.member_status[(chat_id, user_id)] = new
        return self.push(
            {
                "chat_member": {
                    "chat": self.chats.get(chat_id) or self.join(chat_id),
                    "from": self._user(by, None, "群主"),
                    "date": int(time.time()),
                    "old_chat_member": self._member(chat_id, user_id, old),
                    "new_chat_member": self._member(chat_id, user_id, new),
                }
            }
        )

    def confirmed(self, update: dict[str, Any]) -> bool:
        """The bot fetched `update` and asked for the ones after it (getUpdates' offset)."""
        return all(u["update_id"] != update["update_id"] for u in self._updates)

    def last_poll_id(self) -> str:
        return list(self.polls)[-1]

    # ---- HTTP -------------------------------------------------------------------------------

    @staticmethod
    def _answer(result: Any) -> web.Response:
        return web.json_response({"ok": True, "result": result})

    @staticmethod
    def _error(err: BotAPIError) -> web.Response:
        body: dict[str, Any] = {
            "ok": False,
            "error_code": err.code,
            "description": err.description,
        }
        if err.parameters:
            body["parameters"] = err.parameters
        return web.json_response(body, status=err.code)

    async def _not_found(self, request: web.Request) -> web.Response:
        return self._error(BotAPIError(404, "Not Found"))

    async def _download(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return self._error(BotAPIError(401, "Unauthorized"))
        path = request.match_info["path"]
        if path not in self.files:
            return self._error(BotAPIError(404, "Not Found"))
        return web.Response(body=self.files[path], content_type="application/octet-stream")

    async def _read(self, request: web.Request) -> tuple[dict[str, Any], dict[str, bytes]]:
        params: dict[str, Any] = dict(request.query)
        files: dict[str, bytes] = {}
        if request.content_type == "multipart/form-data":
            reader = await request.multipart()
            while (part := await reader.next()) is not None:
                data = await part.read()  # type: ignore[union-attr]
                name = part.name or ""  # type: ignore[union-attr]
                if part.filename:  # type: ignore[union-attr]
                    files[name] = bytes(data)
                    params[name] = f"attach://{name}"
                else:
                    params[name] = bytes(data).decode("utf-8")
        elif request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            form = await request.post()
            params.update({k: str(v) for k, v in form.items()})
        return params, files

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params, files = await self._read(request)
        call = Call(method, _decoded(params), files)
        try:
            if request.match_info["token"] != self.token:
                raise BotAPIError(401, "Unauthorized")
            if method not in _METHODS:
                raise BotAPIError(404, "Not Found")
            queued = self.failures.get(method)
            if queued:
                call.expected = True
                raise queued.pop(0)
            if method == "getUpdates":
                self._record(call)  # on arrival (a long poll); this also wakes an older one
                return self._answer(await self._get_updates(params))
            result = getattr(self, f"_m_{method}", self._m_true)(params, files)
        except BotAPIError as err:
            call.status, call.error = err.code, err.description
            self._record(call)
            return self._error(err)
        self._record(call)
        return self._answer(result)

    def _record(self, call: Call) -> None:
        self.calls.append(call)
        self._notify()

    def _notify(self) -> None:
        async def notify() -> None:
            async with self._changed:
                self._changed.notify_all()

        try:
            asyncio.get_running_loop().create_task(notify())
        except RuntimeError:
            pass

    # ---- methods ----------------------------------------------------------------------------

    async def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("offset", 0) or 0)
        timeout = float(params.get("timeout", 0) or 0)
        limit = int(params.get("limit", 100) or 100)
        if offset:  # confirms every update before it
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        allowed = _json(params, "allowed_updates")
        if isinstance(allowed, list):
            self._allowed = set(allowed) if allowed else None

        def deliverable() -> list[dict[str, Any]]:
            return [u for u in self._updates if self._wanted(u)]

        # A newer getUpdates ends an older one still waiting (Telegram answers the older one
        # 409 Conflict; here it just returns, since its client has gone: a stopping bot's
        # last poll was cancelled and its clean-up poll is the newer one).
        self._polls_started += 1
        mine = self._polls_started

        def done() -> bool:
            return bool(deliverable()) or self._closing or self._polls_started != mine

        if not done() and timeout > 0:
            self.waiting_polls += 1
            try:
                async with self._changed:
                    await asyncio.wait_for(self._changed.wait_for(done), timeout)
            except TimeoutError:
                pass
            finally:
                self.waiting_polls -= 1
                self._notify()
        if self._polls_started != mine:
            return []
        return deliverable()[:limit]

    def _wanted(self, update: dict[str, Any]) -> bool:
        kind = next(k for k in update if k != "update_id")
        if self._allowed is None:
            return kind not in _NOT_BY_DEFAULT
        return kind in self._allowed

    def _m_true(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        return True

    def _m_getMe(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        return {
            **self._bot_user(),
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }

    def _m_setMyCommands(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        commands = _json(params, "commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise bad_request("BOT_COMMANDS_TOO_MUCH")
        for command in commands:
            name = str(command.get("command", ""))
            if not re.fullmatch(r"[a-z0-9_]{1,32}", name):
                raise bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", ""))) <= 256:
                raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
        return True

    def _m_sendChatAction(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        self._chat(params)
        if params.get("action") not in (
            "typing",
            "upload_photo",
            "record_video",
            "upload_video",
            "record_voice",
            "upload_voice",
            "upload_document",
            "choose_sticker",
            "find_location",
            "record_video_note",
            "upload_video_note",
        ):
            raise bad_request("wrong parameter action in request")
        return True

    def _m_sendMessage(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        chat = self._chat(params)
        text = self._text(params, "text", TEXT_LIMIT, "message is too long")
        markup = self._markup(params)
        return self._store(chat, str(params["text"]), markup, text=text)

    def _m_editMessageText(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        chat = self._chat(params)
        key = (chat["id"], int(params.get("message_id", 0) or 0))
        if key not in self.messages:
            raise bad_request("message to edit not found")
        shown = self._text(params, "text", TEXT_LIMIT, "MESSAGE_TOO_LONG")
        markup = self._markup(params)
        old = self.messages[key]
        if parse_html(old.text) == shown and old.markup == markup:
            raise bad_request(
                "message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message"
            )
        old.text, old.markup = str(params["text"]), markup
        return self._message_object(chat, old.message_id, text=shown)

    def _m_deleteMessage(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        chat = self._chat(params)
        if self.messages.pop((chat["id"], int(params.get("message_id", 0))), None) is None:
            raise bad_request("message to delete not found")
        return True

    def _m_sendDocument(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        chat = self._chat(params)
        ref = str(params.get("document", ""))
        if not ref.startswith("attach://") or ref.removeprefix("attach://") not in files:
            raise bad_request("there is no document in the request")
        data = files[ref.removeprefix("attach://")]
        if not data:
            raise bad_request("file must be non-empty")
        caption = ""
        if params.get("caption"):
            caption = self._text(params, "caption", CAPTION_LIMIT, "message caption is too long")
        file_id = f"doc{next(self._ids)}"
        self.files[file_id] = data
        document = {"file_id": file_id, "file_unique_id": f"u-{file_id}", "file_size": len(data)}
        return self._store(chat, caption, self._markup(params), document=document)

    def _m_sendPhoto(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        chat = self._chat(params)
        ref = str(params.get("photo", ""))
        data = files.get(ref.removeprefix("attach://")) if ref.startswith("attach://") else None
        if not data:
            raise bad_request("there is no photo in the request")
        if len(data) > 10 * 1024 * 1024:
            raise bad_request("PHOTO_INVALID_DIMENSIONS")
        caption = ""
        if params.get("caption"):
            caption = self._text(params, "caption", CAPTION_LIMIT, "message caption is too long")
        file_id = f"photo{next(self._ids)}"
        self.files[file_id] = data
        size = {"file_id": file_id, "file_unique_id": f"u-{file_id}", "width": 1, "height": 1}
        return self._store(chat, caption, self._markup(params), photo=[size])

    def _m_sendPoll(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        chat = self._chat(params)
        question = str(params.get("question", ""))
        if not 1 <= len(question) <= 300:
            raise bad_request("POLL_QUESTION_INVALID" if question else "poll question is empty")
        raw = _json(params, "options")
        options = [o.get("text", "") if isinstance(o, dict) else str(o) for o in raw or []]
        if not 2 <= len(options) <= 12:
            raise bad_request("POLL_OPTIONS_INVALID" if options else "poll must have options")
        if any(not 1 <= len(o) <= 100 for o in options):
            raise bad_request("POLL_OPTION_INVALID")
        poll_id = f"poll{next(self._ids)}"
        poll = {
            "id": poll_id,
            "question": question,
            "options": [
                {"text": o, "voter_count": 0, "persistent_id": f"p{i}"}
                for i, o in enumerate(options)
            ],
            "total_voter_count": 0,
            "is_closed": False,
            "is_anonymous": _bool(params.get("is_anonymous", "true")),
            "type": "regular",
            "allows_multiple_answers": False,
            "allows_revoting": True,
            "members_only": False,
        }
        message = self._store(chat, question, self._markup(params), poll=poll)
        self.polls[poll_id] = (chat["id"], message["message_id"])
        return message

    def _m_stopPoll(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        chat = self._chat(params)
        message_id = int(params.get("message_id", 0) or 0)
        found = [p for p, where in self.polls.items() if where == (chat["id"], message_id)]
        if not found:
            raise bad_request("message with poll to stop not found")
        if found[0] in self.stopped_polls:
            raise bad_request("poll has already been closed")
        self.stopped_polls.add(found[0])
        return {
            "id": found[0],
            "question": "?",
            "options": [],
            "total_voter_count": 0,
            "is_closed": True,
            "is_anonymous": False,
            "type": "regular",
            "allows_multiple_answers": False,
            "allows_revoting": True,
            "members_only": False,
        }

    def _m_answerCallbackQuery(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        query_id = str(params.get("callback_query_id", ""))
        if query_id not in self._open_queries:
            raise bad_request(
                "query is too old and response timeout expired or query ID is invalid"
            )
        if len(str(params.get("text", ""))) > CALLBACK_ANSWER_LIMIT:
            raise bad_request("MESSAGE_TOO_LONG")
        self._open_queries.discard(query_id)
        return True

    def _m_getChat(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        return self._chat(params)

    def _m_getChatMember(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        chat = self._chat(params)
        user_id = int(params.get("user_id", 0) or 0)
        if not user_id:
            raise bad_request("user_id is empty")
        return self._member(chat["id"], user_id)

    def _m_getChatAdministrators(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        chat = self._chat(params)
        if chat["type"] == "private":
            raise bad_request("there are no administrators in the private chat")
        admins = [
            self._member(c, u)
            for (c, u), status in self.member_status.items()
            if c == chat["id"] and status in ("creator", "administrator")
        ]
        return [*admins, self._member(chat["id"], BOT_ID, "administrator")]

    def _m_getFile(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        file_id = str(params.get("file_id", ""))
        if file_id not in self.files:
            raise bad_request("invalid file_id")
        return {
            "file_id": file_id,
            "file_unique_id": f"u-{file_id}",
            "file_size": len(self.files[file_id]),
            "file_path": file_id,
        }

    # ---- helpers ----------------------------------------------------------------------------

    def _chat(self, params: dict[str, Any]) -> dict[str, Any]:
        raw = params.get("chat_id")
        if raw in (None, ""):
            raise bad_request("chat_id is empty")
        try:
            chat_id = int(raw)
        except (TypeError, ValueError):
            raise bad_request("chat not found") from None
        if chat_id not in self.chats:
            raise bad_request("chat not found")
        return self.chats[chat_id]

    @staticmethod
    def _text(params: dict[str, Any], name: str, limit: int, too_long: str) -> str:
        raw = params.get(name)
        if raw is None or raw == "":
            raise bad_request(f"{'message text' if name == 'text' else name} is empty")
        raw = str(raw)
        mode = str(params.get("parse_mode", "")).upper()
        shown = parse_html(raw) if mode == "HTML" else raw
        if not shown.strip():
            raise bad_request("message text is empty")
        if utf16_len(shown) > limit:
            raise bad_request(too_long)
        return shown

    @staticmethod
    def _markup(params: dict[str, Any]) -> Any:
        markup = _json(params, "reply_markup")
        if not isinstance(markup, dict):
            return markup
        for row in markup.get("inline_keyboard", []):
            for button in row:
                if not str(button.get("text", "")):
                    raise bad_request("text buttons are unallowed in the inline keyboard")
                if "callback_data" in button:
                    size = len(str(button["callback_data"]).encode("utf-8"))
                    if not 1 <= size <= CALLBACK_DATA_LIMIT:
                        raise bad_request("BUTTON_DATA_INVALID")
        return markup

    def _store(self, chat: dict[str, Any], source: str, markup: Any, **extra: Any) -> Any:
        message_id = next(self._message_ids)
        self.messages[(chat["id"], message_id)] = SentMessage(
            chat["id"], message_id, source, markup
        )
        return self._message_object(chat, message_id, **extra)

    def _message_object(self, chat: dict[str, Any], message_id: int, **extra: Any) -> Any:
        return {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": chat,
            "from": self._bot_user(),
            **extra,
        }

    def _member(self, chat_id: int, user_id: int, status: str | None = None) -> dict[str, Any]:
        status = status or self.member_status.get((chat_id, user_id), "member")
        user = {"id": user_id, "is_bot": user_id == BOT_ID, "first_name": "U"}
        member: dict[str, Any] = {"status": status, "user": user}
        if status == "administrator":
            member.update(
                {
                    "can_be_edited": False,
                    "is_anonymous": False,
                    "can_manage_chat": True,
                    "can_delete_messages": True,
                    "can_manage_video_chats": True,
                    "can_restrict_members": True,
                    "can_promote_members": False,
                    "can_change_info": True,
                    "can_invite_users": True,
                    "can_post_stories": False,
                    "can_edit_stories": False,
                    "can_delete_stories": False,
                }
            )
        elif status == "creator":
            member["is_anonymous"] = False
        return member

    @staticmethod
    def _bot_user() -> dict[str, Any]:
        return {"id": BOT_ID, "is_bot": True, "first_name": "百宝箱", "username": BOT_USERNAME}

    @staticmethod
    def _user(user_id: int, lang: str | None, name: str) -> dict[str, Any]:
        user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": name}
        if lang:
            user["language_code"] = lang
        return user

    def _incoming(self, chat_id: int, user_id: int, lang: str | None, name: str) -> dict[str, Any]:
        chat = self.chats.get(chat_id) or self.join(chat_id)
        return {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": chat,
            "from": self._user(user_id, lang, name),
        }


_INTS = {"chat_id", "user_id", "message_id", "message_thread_id", "offset", "limit", "timeout"}
_JSONS = {"reply_markup", "commands", "options", "allowed_updates", "entities", "scope"}
_BOOLS = {"is_anonymous", "show_alert", "disable_web_page_preview", "drop_pending_updates"}


def _decoded(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters as the bot meant them (the wire carries strings): ints, JSON, booleans."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        if isinstance(value, str):
            try:
                if name in _INTS and re.fullmatch(r"-?\d+", value):
                    value = int(value)
                elif name in _JSONS:
                    value = json.loads(value)
                elif name in _BOOLS:
                    value = _bool(value)
            except ValueError:
                pass
        out[name] = value
    return out


def _json(params: dict[str, Any], name: str) -> Any:
    value = params.get(name)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise bad_request(f"can't parse {name} JSON object") from None
    return value


def _bool(value: Any) -> bool:
    return value is True or str(value).lower() in ("true", "1")
