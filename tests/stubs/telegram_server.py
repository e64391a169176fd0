"""A loopback Telegram Bot API server (aiohttp) for python-telegram-bot's own `HTTPXRequest`.

The transport under test is configured exactly as in production, only with
`TELEGRAM_API_BASE=<server.api_base>` and `clock=server.clock` (the server's virtual time): PTB builds every request,
sends it over real HTTP (form-encoded, or multipart with file uploads) and parses the answers.
Updates reach the bot the only way they reach a polling bot: `getUpdates` long polling. A test
queues an update with `server.push_*`; the pending `getUpdates` returns it at once.

It fails closed. Every request is recorded as a `Call` (method, decoded parameters, uploaded
files, the server's time, the answer's status); `errors()` are the ones it refused, and the
`telegram_wire` fixture fails a test that leaves any it did not expect. What it refuses:

- the token in the path (401 Unauthorized); a method it has no handler for, and any other path
  (404 Not Found, Telegram's body for an unknown method): only the methods the bot calls have
  handlers, each checking its parameters the way the Bot API server reads them
  (`telegram_rules.py`, after tdlib/telegram-bot-api's Client.cpp);
- a parameter the method does not take, or one Telegram would silently misread (a boolean
  "True", an integer "abc"), with a `[stub]` description (`StubGap`): Telegram would accept it,
  but it cannot be what the bot meant;
- chat ids of chats the bot is not in ("chat not found"); `message_thread_id` in a forum (a
  supergroup with topics) or a private chat naming no open topic ("message thread not found",
  also for the General topic, 1; "TOPIC_CLOSED"), ignored in a group without topics, as
  Telegram does;
- `parse_mode` other than HTML / none ("unsupported parse_mode"; Markdown is refused as
  unchecked); HTML that does not parse ("can't parse entities: …"); text that is empty, or
  longer than 4,096 (captions 1,024) after entity parsing, in code points or UTF-16 code units;
- inline keyboards (`callback_data` of 1–64 bytes, "BUTTON_DATA_INVALID"), link preview
  options, poll / document / photo / command limits, chat actions;
- editMessageText of a missing message or with the same content ("message is not modified");
  answerCallbackQuery of an unknown, already answered or expired query ("query is too old …";
  `expire_callback_queries`);
- a second long poll while one is waiting: the older one is answered 409 "Conflict: terminated
  by other getUpdates request; make sure that only one bot instance is running" (Telegram's
  `abort_long_poll`; a poll whose client has hung up is not counted);
- flood: the limits of `telegram_rules.FloodModel` on the server's time — per chat 3 messages
  in any 3 s, per group 20 in any 60 s, the whole bot 30 in any 1 s — refused 429 "Too Many
  Requests: retry after N" with `parameters.retry_after` N (whole seconds). A test injects one
  with `flood(method, retry_after)`, any refusal with `fail(method, code, description)`.

Any exception inside the server is answered 500 and recorded as a crash (`Call.crash`, the
traceback): the fixture fails the test even if it expected errors.

    async with TelegramServer(token="123:TEST") as server:
        settings = load_settings(telegram_token=server.token, telegram_api_base=server.api_base)
        async with TelegramTransport(router, settings, clock=server.clock) as transport:
            server.push_command("/ask 什么是经纶？")
            [sent] = await server.wait_for("sendMessage")
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.stubs.clock import ServerTime, VirtualClock
from tests.stubs.loopback import LoopbackServer
from tests.stubs.telegram_rules import (
    CHAT_ACTIONS,
    MESSAGE_METHODS,
    Args,
    BotAPIError,
    FloodModel,
    StubGap,
    bad_request,
    bot_commands,
    caption,
    formatted,
    language_code,
    message_text,
    parse_html,
    reply_markup,
    too_many_requests,
    utf16_len,
)

__all__ = ["BOT_USERNAME", "BotAPIError", "Call", "TelegramServer", "parse_html", "utf16_len"]

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
GENERAL_TOPIC = 1  # a forum's General topic: never a message_thread_id the Bot API takes
LONG_POLL_MAX_TIMEOUT = 50
CONFLICT = (
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance "
    "is running"
)

# The parameters each method the bot calls takes (and the stub checks). Anything else is
# refused: Telegram would ignore it, so the bot cannot have meant it.
_SEND = {"chat_id", "message_thread_id", "reply_markup", "disable_notification", "protect_content"}
_PARAMS: dict[str, set[str]] = {
    "getMe": set(),
    "getUpdates": {"offset", "limit", "timeout", "allowed_updates"},
    "deleteWebhook": {"drop_pending_updates"},
    "setMyCommands": {"commands", "scope", "language_code"},
    "sendChatAction": {"chat_id", "action", "message_thread_id"},
    "sendMessage": _SEND
    | {"text", "parse_mode", "link_preview_options", "disable_web_page_preview"},
    "editMessageText": {
        "chat_id",
        "message_id",
        "text",
        "parse_mode",
        "link_preview_options",
        "disable_web_page_preview",
        "reply_markup",
    },
    "sendDocument": _SEND | {"document", "caption", "parse_mode", "disable_content_type_detection"},
    "sendPhoto": _SEND | {"photo", "caption", "parse_mode"},
    "sendPoll": _SEND | {"question", "options", "is_anonymous", "type", "allows_multiple_answers"},
    "stopPoll": {"chat_id", "message_id", "reply_markup"},
    "answerCallbackQuery": {"callback_query_id", "text", "show_alert", "cache_time"},
    "getChatAdministrators": {"chat_id"},
    "getFile": {"file_id"},
}

# Update kinds Telegram only sends when allowed_updates names them.
_NOT_BY_DEFAULT = {"chat_member", "message_reaction", "message_reaction_count"}


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    status: int = 200
    error: str = ""  # the description of an error answer
    expected: bool = False  # injected by the test (flood, fail) or taken by expect_errors()
    at: float = 0.0  # the server clock when the request arrived
    unread: bool = False  # its client hung up before the answer (a long poll it cancelled)
    crash: str = ""  # the traceback of an exception inside the server


@dataclass
class SentMessage:
    chat_id: int
    message_id: int
    text: str
    markup: Any = None
    thread_id: int | None = None


@dataclass
class Topic:
    name: str
    closed: bool = False


class TelegramServer(LoopbackServer):
    """The Bot API on loopback (`async with` serves it)."""

    def __init__(self, token: str = "123456:TEST-token", *, time: ServerTime | None = None) -> None:
        self.token = token
        # The server's time (a `VirtualClock` unless given: now, advance, slept), and the
        # product's `Clock` on it, for the transport under test (`clock=server.clock`).
        self.time: ServerTime = time if time is not None else VirtualClock()
        self.clock = self.time.as_clock()
        self.flood_model = FloodModel()
        self.calls: list[Call] = []
        self.files: dict[str, bytes] = {}  # file_id → content (getFile + download)
        self.member_status: dict[tuple[int, int], str] = {}  # (chat, user) → status
        self.chats: dict[int, dict[str, Any]] = {}  # chats the bot is in
        self.topics: dict[int, dict[int, Topic]] = {}  # chat → thread id → forum topic
        self.messages: dict[tuple[int, int], SentMessage] = {}
        self.polls: dict[str, tuple[int, int]] = {}  # poll id → (chat, message id)
        self.stopped_polls: set[str] = set()  # stopPoll closed them: no more answers
        self.failures: dict[str, list[BotAPIError]] = {}  # method → errors answered first
        self._updates: list[dict[str, Any]] = []
        # Telegram remembers the last allowed_updates; by default it never sends these kinds.
        self._allowed: set[str] | None = None
        self._long_poll: Call | None = None  # the getUpdates request waiting now
        self._superseded: set[int] = set()  # ids of long polls a newer one ended
        self.waiting_polls = 0  # getUpdates requests held open right now
        self._closing = False
        self._open_queries: set[str] = set()
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()

    # ---- addresses --------------------------------------------------------------------------

    @property
    def api_base(self) -> str:
        """For `TELEGRAM_API_BASE` (the transport appends the token and the method)."""
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def file_base(self) -> str:
        """PTB's `base_file_url` (what the transport derives from TELEGRAM_API_BASE)."""
        return f"http://127.0.0.1:{self.port}/file/bot"

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        return app

    def _app_runner(self, app: web.Application) -> web.AppRunner:
        # A handler whose client hung up is cancelled (a long poll the bot gave up on).
        return web.AppRunner(app, handle_signals=False, handler_cancellation=True)

    async def _stop_serving(self) -> None:
        self._closing = True  # pending long polls end now, not after their timeout
        async with self._changed:
            self._changed.notify_all()

    # ---- what a test does -------------------------------------------------------------------

    def named(self, method: str) -> list[Call]:
        """Successful calls of `method`, in order."""
        return [c for c in self.calls if c.method == method and c.status == 200]

    def errors(self) -> list[Call]:
        """Calls the server refused (crashes too): a correct transport makes none it was not
        told to expect."""
        return [c for c in self.calls if c.status != 200 and not c.unread]

    def expect_errors(self) -> list[Call]:
        """The refusals so far that the test provoked on purpose (the fixture stops counting
        them against the test). Crashes are never taken: see `take_crashes`."""
        taken = [c for c in self.errors() if not c.expected and not c.crash]
        for call in taken:
            call.expected = True
        return taken

    def take_crashes(self) -> list[Call]:
        """The crashes so far, for the one test that provokes them on purpose."""
        taken = [c for c in self.calls if c.crash and not c.expected]
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
        self.failures.setdefault(method, []).append(too_many_requests(retry_after))

    def fail(self, method: str, code: int, description: str) -> None:
        """The next `method` call gets this error answer."""
        self.failures.setdefault(method, []).append(BotAPIError(code, description))

    def join(self, chat_id: int, title: str = "读经小组", *, forum: bool = False) -> dict[str, Any]:
        """The bot is in this chat (a private chat for a positive id, else a supergroup; a
        `forum` has topics: `open_topic`)."""
        chat: dict[str, Any]
        if chat_id > 0:
            chat = {"id": chat_id, "type": "private", "first_name": "林远"}
        else:
            chat = {"id": chat_id, "type": "supergroup", "title": title}
            if forum:
                chat["is_forum"] = True
        self.chats[chat_id] = chat
        return chat

    def open_topic(self, chat_id: int, name: str = "读经") -> int:
        """A new topic in the forum `chat_id`; returns its message_thread_id (the id of the
        topic's first, service message, as on Telegram)."""
        chat = self.chats.get(chat_id) or self.join(chat_id, forum=True)
        if not chat.get("is_forum"):
            raise AssertionError(f"chat {chat_id} has no topics: join(..., forum=True)")
        thread = next(self._message_ids)
        self.topics.setdefault(chat_id, {})[thread] = Topic(name)
        return thread

    def close_topic(self, chat_id: int, thread: int) -> None:
        self.topics[chat_id][thread].closed = True

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
        thread_id: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """A member's message; with `thread_id`, posted in that forum topic."""
        message = self._incoming(chat_id, user_id, lang, name, thread_id)
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
        thread_id: int | None = None,
    ) -> dict[str, Any]:
        file_id = f"file{next(self._ids)}"
        self.files[file_id] = content
        message = self._incoming(chat_id, user_id, lang, "林远", thread_id)
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

    def push_photo(
        self,
        caption: str,
        content: bytes = b"\xff\xd8\xff",
        *,
        chat_id: int = 42,
        user_id: int = 42,
        lang: str | None = "zh-hans",
    ) -> dict[str, Any]:
        """A photo sent with `caption` (Telegram sends a photo in several sizes, the largest
        last; each is a file of its own)."""
        file_id = f"photo{next(self._ids)}"
        self.files[file_id] = content
        message = self._incoming(chat_id, user_id, lang, "林远")
        message["caption"] = caption
        if caption.startswith("/"):
            head = caption.split(maxsplit=1)[0]
            message["caption_entities"] = [
                {"type": "bot_command", "offset": 0, "length": utf16_len(head)}
            ]
        size = {"file_unique_id": f"u-{file_id}", "width": 800, "height": 600}
        message["photo"] = [{**size, "file_id": file_id, "file_size": len(content)}]
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
        query_id = str(4_000_000_000 + next(self._ids))
        self._open_queries.add(query_id)
        shown = self._message_object(
            self.chats[sent.chat_id], sent.message_id, sent.thread_id, text=parse_html(sent.text)
        )
        return self.push(
            {
                "callback_query": {
                    "id": query_id,
                    "from": self._user(user_id, lang, "林远"),
                    "chat_instance": f"ci{sent.chat_id}",
                    "data": data,
                    "message": shown,
                }
            }
        )

    def expire_callback_queries(self) -> None:
        """Every press not yet answered can no longer be (Telegram keeps a query open for a
        short while only: a press made while the bot was down is delivered after it restarts,
        and answering it then fails with "query is too old …")."""
        self._open_queries.clear()

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

    def _refuse(self, call: Call, err: BotAPIError) -> web.Response:
        call.status, call.error = err.code, err.description
        self._record(call)
        return self._error(err)

    def _crashed(self, call: Call) -> web.Response:
        call.crash = traceback.format_exc()
        return self._refuse(call, BotAPIError(500, "Internal Server Error"))

    async def _not_found(self, request: web.Request) -> web.Response:
        call = Call(f"{request.method} {request.path}", {}, at=self.time.now())
        return self._refuse(call, BotAPIError(404, "Not Found"))

    async def _download(self, request: web.Request) -> web.Response:
        path = request.match_info["path"]
        call = Call("file", {"path": path}, at=self.time.now())
        try:
            if request.match_info["token"] != self.token:
                return self._refuse(call, BotAPIError(401, "Unauthorized"))
            if path not in self.files:
                return self._refuse(call, BotAPIError(404, "Not Found"))
            self._record(call)
            return web.Response(body=self.files[path], content_type="application/octet-stream")
        except Exception:
            return self._crashed(call)

    async def _read(self, request: web.Request) -> tuple[dict[str, str], dict[str, bytes]]:
        """The parameters as the Bot API server reads them: strings (a JSON body's numbers,
        booleans and objects as their text), uploaded files apart."""
        params: dict[str, str] = dict(request.query)
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
            body = await request.json()
            if not isinstance(body, dict):
                raise bad_request("JSON object expected")
            params.update({k: _as_arg(v) for k, v in body.items()})
        elif request.can_read_body:
            form = await request.post()
            params.update({k: str(v) for k, v in form.items()})
        return params, files

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        call = Call(method, {}, at=self.time.now())
        try:
            raw, files = await self._read(request)
            call.params, call.files = _decoded(raw), files
            if request.match_info["token"] != self.token:
                raise BotAPIError(401, "Unauthorized")
            if method not in _PARAMS:
                raise BotAPIError(404, "Not Found")  # unknown, or no handler here: fail closed
            queued = self.failures.get(method)
            if queued:
                call.expected = True
                raise queued.pop(0)
            unknown = sorted(set(raw) - _PARAMS[method])
            if unknown:
                raise StubGap(f"{method} takes no parameter {', '.join(unknown)}")
            args = Args(method, raw, files)
            if method == "getUpdates":
                return await self._get_updates(call, args, request)
            chat_id = self._flood_check(method, args)
            result = getattr(self, f"_m_{method}")(args)
        except BotAPIError as err:
            return self._refuse(call, err)
        except Exception:
            return self._crashed(call)
        if chat_id is not None:
            self.flood_model.accept(chat_id, call.at)
        self._record(call)
        return self._answer(result)

    def _flood_check(self, method: str, args: Args) -> int | None:
        """The chat a message request counts against (None for other methods); refused 429
        when the flood model has no room for it."""
        if method not in MESSAGE_METHODS:
            return None
        chat_id = self._chat(args)["id"]
        wait = self.flood_model.retry_after(chat_id, self.time.now())
        if wait is not None:
            raise too_many_requests(wait)
        return int(chat_id)

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

    # ---- getUpdates -------------------------------------------------------------------------

    async def _get_updates(self, call: Call, args: Args, request: web.Request) -> web.Response:
        offset = args.integer("offset")
        limit = min(max(args.integer("limit", 100), 1), 100)
        timeout = min(max(args.integer("timeout"), 0), LONG_POLL_MAX_TIMEOUT)
        allowed = args.json("allowed_updates", "allowed updates")
        if offset:  # confirms every update before it
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        if isinstance(allowed, list):
            self._allowed = set(allowed) if allowed else None
        self._record(call)  # on arrival (a long poll)

        def deliverable() -> list[dict[str, Any]]:
            return [u for u in self._updates if self._wanted(u)]

        if deliverable() or timeout == 0 or self._closing:
            return self._answer(deliverable()[:limit])
        # A long poll. Telegram ends the one already waiting with 409 (`abort_long_poll`).
        if self._long_poll is not None:
            self._superseded.add(id(self._long_poll))
        self._long_poll = call
        self.waiting_polls += 1
        self._notify()
        mine = id(call)

        def done() -> bool:
            return mine in self._superseded or bool(deliverable()) or self._closing

        try:
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(done), timeout)
        except TimeoutError:
            pass
        except asyncio.CancelledError:
            call.unread = True  # the client hung up: nobody reads this answer
            raise
        finally:
            self.waiting_polls -= 1
            if self._long_poll is call:
                self._long_poll = None
            self._notify()
        if mine in self._superseded:
            self._superseded.discard(mine)
            return await self._conflict(call, request)
        return self._answer(deliverable()[:limit])

    async def _conflict(self, call: Call, request: web.Request) -> web.Response:
        for _ in range(20):  # let a hang-up that is under way arrive (no real time passes)
            await asyncio.sleep(0)
        transport = request.transport
        call.unread = transport is None or transport.is_closing()
        call.status, call.error = 409, CONFLICT
        self._notify()
        return self._error(BotAPIError(409, CONFLICT))

    def _wanted(self, update: dict[str, Any]) -> bool:
        kind = next(k for k in update if k != "update_id")
        if self._allowed is None:
            return kind not in _NOT_BY_DEFAULT
        return kind in self._allowed

    # ---- methods ----------------------------------------------------------------------------

    def _m_getMe(self, args: Args) -> Any:
        return {
            **self._bot_user(),
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }

    def _m_deleteWebhook(self, args: Args) -> Any:
        args.boolean("drop_pending_updates")
        return True

    def _m_setMyCommands(self, args: Args) -> Any:
        bot_commands(args)
        scope = args.json("scope", "BotCommandScope")
        if scope is not None and scope != {"type": "default"}:
            raise StubGap(f"command scope {scope!r}")
        language_code(args)
        return True

    def _m_sendChatAction(self, args: Args) -> Any:
        chat = self._chat(args)
        self._thread(chat, args)
        if args.text("action").lower() not in CHAT_ACTIONS:
            raise bad_request("wrong parameter action in request")
        return True

    def _m_sendMessage(self, args: Args) -> Any:
        chat = self._chat(args)
        thread = self._thread(chat, args)
        shown = message_text(args, limit=TEXT_LIMIT, too_long="message is too long")
        markup = reply_markup(args, CALLBACK_DATA_LIMIT)
        self._flags(args)
        return self._store(chat, thread, args.text("text"), markup, text=shown)

    def _m_editMessageText(self, args: Args) -> Any:
        shown = message_text(args, limit=TEXT_LIMIT, too_long="MESSAGE_TOO_LONG")
        markup = reply_markup(args, CALLBACK_DATA_LIMIT)
        chat = self._chat(args)
        key = (chat["id"], args.integer("message_id"))
        if key not in self.messages:
            raise bad_request("message to edit not found")
        old = self.messages[key]
        if parse_html(old.text) == shown and old.markup == markup:
            raise bad_request(
                "message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message"
            )
        old.text, old.markup = args.text("text"), markup
        return self._message_object(chat, old.message_id, old.thread_id, text=shown)

    def _m_sendDocument(self, args: Args) -> Any:
        chat = self._chat(args)
        thread = self._thread(chat, args)
        data = self._upload(args, "document")
        shown = caption(args, CAPTION_LIMIT)
        markup = reply_markup(args, CALLBACK_DATA_LIMIT)
        self._flags(args, "disable_content_type_detection")
        file_id = f"doc{next(self._ids)}"
        self.files[file_id] = data
        document = {"file_id": file_id, "file_unique_id": f"u-{file_id}", "file_size": len(data)}
        return self._store(chat, thread, shown, markup, document=document)

    def _m_sendPhoto(self, args: Args) -> Any:
        chat = self._chat(args)
        thread = self._thread(chat, args)
        data = self._upload(args, "photo")
        if len(data) > 10 * 1024 * 1024:
            raise bad_request("PHOTO_INVALID_DIMENSIONS")
        shown = caption(args, CAPTION_LIMIT)
        markup = reply_markup(args, CALLBACK_DATA_LIMIT)
        self._flags(args)
        file_id = f"photo{next(self._ids)}"
        self.files[file_id] = data
        size = {"file_id": file_id, "file_unique_id": f"u-{file_id}", "width": 1, "height": 1}
        return self._store(chat, thread, shown, markup, photo=[size])

    def _m_sendPoll(self, args: Args) -> Any:
        chat = self._chat(args)
        thread = self._thread(chat, args)
        question = formatted(args.text("question"), "")
        if not 1 <= len(question) <= 300:
            raise bad_request("POLL_QUESTION_INVALID" if question else "poll question is empty")
        options = _poll_options(args)
        if args.text("type") not in ("", "regular"):
            raise StubGap(f"poll type {args.text('type')!r}")
        anonymous = args.boolean("is_anonymous", default=True)
        args.boolean("allows_multiple_answers")
        markup = reply_markup(args, CALLBACK_DATA_LIMIT)
        self._flags(args)
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
            "is_anonymous": anonymous,
            "type": "regular",
            "allows_multiple_answers": False,
            "allows_revoting": True,
            "members_only": False,
        }
        message = self._store(chat, thread, question, markup, poll=poll)
        self.polls[poll_id] = (chat["id"], message["message_id"])
        return message

    def _m_stopPoll(self, args: Args) -> Any:
        chat = self._chat(args)
        message_id = args.integer("message_id")
        reply_markup(args, CALLBACK_DATA_LIMIT)
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

    def _m_answerCallbackQuery(self, args: Args) -> Any:
        query_id = args.text("callback_query_id")
        args.boolean("show_alert")
        args.integer("cache_time")
        if query_id not in self._open_queries:
            raise bad_request(
                "query is too old and response timeout expired or query ID is invalid"
            )
        if len(args.text("text")) > CALLBACK_ANSWER_LIMIT:
            raise bad_request("MESSAGE_TOO_LONG")
        self._open_queries.discard(query_id)
        return True

    def _m_getChatAdministrators(self, args: Args) -> Any:
        chat = self._chat(args)
        if chat["type"] == "private":
            raise bad_request("there are no administrators in the private chat")
        admins = [
            self._member(c, u)
            for (c, u), status in self.member_status.items()
            if c == chat["id"] and status in ("creator", "administrator")
        ]
        return [*admins, self._member(chat["id"], BOT_ID, "administrator")]

    def _m_getFile(self, args: Args) -> Any:
        file_id = args.text("file_id")
        if not file_id:
            raise bad_request("file_id not specified")
        if file_id not in self.files:
            raise bad_request("invalid file_id")
        return {
            "file_id": file_id,
            "file_unique_id": f"u-{file_id}",
            "file_size": len(self.files[file_id]),
            "file_path": file_id,
        }

    # ---- helpers ----------------------------------------------------------------------------

    def _chat(self, args: Args) -> dict[str, Any]:
        raw = args.text("chat_id").strip()
        if not raw:
            raise bad_request("chat_id is empty")
        if raw.startswith("@"):
            raise StubGap("chat_id by @username: the bot addresses chats by id")
        if not re.fullmatch(r"-?\d+", raw) or int(raw) not in self.chats:
            raise bad_request("chat not found")
        return self.chats[int(raw)]

    def _thread(self, chat: dict[str, Any], args: Args) -> int | None:
        """`check_message_topic`: the topic a message goes to. A forum (or a private chat)
        checks the topic exists; a group without topics ignores the parameter."""
        thread = args.integer("message_thread_id")
        if thread <= 0:
            return None
        if chat["type"] != "private" and not chat.get("is_forum"):
            return None
        topic = self.topics.get(chat["id"], {}).get(thread)
        if thread == GENERAL_TOPIC or topic is None:
            raise bad_request("message thread not found")
        if topic.closed:
            raise bad_request("TOPIC_CLOSED")
        return thread

    @staticmethod
    def _upload(args: Args, name: str) -> bytes:
        data = args.file(name)
        if data is None:
            if args.has(name):
                raise StubGap(f"{name} by file_id or URL: the bot uploads its files")
            raise bad_request(f"there is no {name} in the request")
        if not data:
            raise bad_request("file must be non-empty")
        return data

    @staticmethod
    def _flags(args: Args, *more: str) -> None:
        for name in ("disable_notification", "protect_content", *more):
            args.boolean(name)

    def _store(
        self, chat: dict[str, Any], thread: int | None, source: str, markup: Any, **extra: Any
    ) -> Any:
        message_id = next(self._message_ids)
        self.messages[(chat["id"], message_id)] = SentMessage(
            chat["id"], message_id, source, markup, thread
        )
        return self._message_object(chat, message_id, thread, **extra)

    def _message_object(
        self, chat: dict[str, Any], message_id: int, thread: int | None = None, **extra: Any
    ) -> Any:
        message = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": chat,
            "from": self._bot_user(),
            **extra,
        }
        if thread is not None:
            message.update({"message_thread_id": thread, "is_topic_message": True})
        return message

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

    def _incoming(
        self, chat_id: int, user_id: int, lang: str | None, name: str, thread: int | None = None
    ) -> dict[str, Any]:
        chat = self.chats.get(chat_id) or self.join(chat_id)
        if thread is not None and thread not in self.topics.get(chat_id, {}):
            raise AssertionError(f"chat {chat_id} has no topic {thread}: open_topic() first")
        message = {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": chat,
            "from": self._user(user_id, lang, name),
        }
        if thread is not None:
            message.update({"message_thread_id": thread, "is_topic_message": True})
            # A message in a topic that replies to nothing else replies to the topic's first,
            # service message, which names the topic (as Telegram sends it).
            created = {"name": self.topics[chat_id][thread].name, "icon_color": 7322096}
            message["reply_to_message"] = {
                "message_id": thread,
                "date": message["date"],
                "chat": chat,
                "message_thread_id": thread,
                "is_topic_message": True,
                "forum_topic_created": created,
            }
        return message


def _poll_options(args: Args) -> list[str]:
    raw = args.json("options", "options")
    if raw is None:
        raise bad_request("poll must have options")
    if not isinstance(raw, list):
        raise bad_request("expected an Array of String as options")
    options = []
    for option in raw:
        if isinstance(option, dict) and isinstance(option.get("text"), str):
            if set(option) - {"text"}:
                raise StubGap(f"poll option fields {sorted(set(option) - {'text'})}")
            options.append(option["text"])
        elif isinstance(option, str):
            options.append(option)
        else:
            raise bad_request("expected an option to be of type String")
    if not 2 <= len(options) <= 12:
        raise bad_request("POLL_OPTIONS_INVALID" if options else "poll must have options")
    if any(not 1 <= len(o) <= 100 for o in options):
        raise bad_request("POLL_OPTION_INVALID")
    return options


_INTS = {"chat_id", "user_id", "message_id", "message_thread_id", "offset", "limit", "timeout"}
_JSONS = {
    "reply_markup",
    "commands",
    "options",
    "allowed_updates",
    "entities",
    "scope",
    "link_preview_options",
}
_BOOLS = {
    "is_anonymous",
    "show_alert",
    "disable_web_page_preview",
    "drop_pending_updates",
    "allows_multiple_answers",
    "disable_notification",
    "protect_content",
}


def _decoded(params: dict[str, str]) -> dict[str, Any]:
    """Parameters as the bot meant them (the wire carries strings), for tests to read: ints,
    JSON, booleans. Validation reads the strings (`Args`)."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        decoded: Any = value
        try:
            if name in _INTS and re.fullmatch(r"-?\d+", value):
                decoded = int(value)
            elif name in _JSONS:
                decoded = json.loads(value)
            elif name in _BOOLS:
                decoded = value.lower() in ("true", "1", "yes")
        except ValueError:
            pass
        out[name] = decoded
    return out


def _as_arg(value: Any) -> str:
    """A JSON body's value as the Bot API server reads it: the text of the value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)
