"""Telegram transport (python-telegram-bot): updates in (each an `Invocation` for
`Router.handle`), HTML messages out. Thin on purpose: parsing and validation live in the router,
formatting in `bot.render.telegram`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from telegram import BotCommand, Chat, InlineKeyboardMarkup, Message, Update, User
from telegram.constants import ChatAction, ChatMemberStatus, ChatType, ParseMode
from telegram.error import BadRequest, TelegramError
from telegram.ext import (
    Application,
    ApplicationBuilder,
    CallbackQueryHandler,
    ChatMemberHandler,
    ContextTypes,
    MessageHandler,
    PollAnswerHandler,
    filters,
)
from telegram.request import BaseRequest

from bot.actor import Actor, ChatKind
from bot.admin import AdminCache, AdminUnknown, MemberFacts
from bot.registry import PollAnswer, Upload, UploadFailed
from bot.render.stream import TELEGRAM_EDIT_INTERVAL_S, ActionTable, StreamingEditor
from bot.render.telegram import CALLBACK_LIMIT, TelegramMessage, plain_preview, render
from bot.reply import Posted, Reply
from bot.router import Invocation, Line, Post, Press, Router
from bot.settings import Settings
from bot.transports.base import ChatTransport, required_token
from bot.transports.telegram_flood import FloodControl
from kernel.i18n import Lang
from retrieval.clock import Clock

log = logging.getLogger(__name__)

TYPING_EVERY_S = 4.0
ADMIN_CACHE_S = 600.0
POLL_MEMORY = 1000
PHOTO_NAME = "photo.jpg"  # Telegram sends every photo as a JPEG

Context = ContextTypes.DEFAULT_TYPE


@dataclass(frozen=True, slots=True)
class _PollTarget:
    """Where a native poll was posted: only to say why an answer was refused (the answer
    itself carries no chat; the round behind the poll is the writers' room's to know)."""

    chat_id: int
    thread_id: int | None


@dataclass(frozen=True, slots=True)
class _Chat:
    """Where a reply goes: a chat (a forum topic in it), and the editor that may already
    show the reply's first message (streamed)."""

    chat_id: int
    thread_id: int | None
    editor: StreamingEditor | None = None
    state: _EditState | None = None


class TelegramTransport(ChatTransport[_Chat]):
    name = "telegram"

    def __init__(
        self,
        router: Router,
        settings: Settings,
        *,
        request: BaseRequest | None = None,
        edit_interval_s: float = TELEGRAM_EDIT_INTERVAL_S,
        concurrent_updates: int = 8,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(router, clock=clock)
        token = required_token(settings.telegram_token, "TELEGRAM_TOKEN")
        self._settings = settings
        self._edit_interval = edit_interval_s
        self._actions = ActionTable(CALLBACK_LIMIT)
        self._polls: OrderedDict[str, _PollTarget] = OrderedDict()
        self.admins = AdminCache(self._fetch_admins, ttl_s=ADMIN_CACHE_S)
        self._running = False
        base = settings.telegram_api_base
        builder = (
            ApplicationBuilder()
            .token(token.get_secret_value())
            .base_url(base)
            .base_file_url(base[: -len("/bot")] + "/file/bot" if base.endswith("/bot") else base)
            .concurrent_updates(concurrent_updates)  # 1: one update after another, in order
            .rate_limiter(FloodControl(self.clock))  # the one flood-control layer: pacing and 429s
        )
        if request is not None:
            builder = builder.request(request).get_updates_request(request)
        self.app: Application = builder.build()  # type: ignore[type-arg]
        # Every new message goes to the router, which decides what deserves an answer (any
        # command or text in a private chat; only our own commands in a group).
        self.app.add_handler(
            MessageHandler(
                filters.UpdateType.MESSAGE & (filters.TEXT | filters.Document.ALL | filters.PHOTO),
                self._on_message,
            )
        )
        self.app.add_handler(CallbackQueryHandler(self._on_callback))
        self.app.add_handler(PollAnswerHandler(self._on_poll_answer))
        self.app.add_handler(
            ChatMemberHandler(self._on_chat_member, ChatMemberHandler.ANY_CHAT_MEMBER)
        )
        self.app.add_error_handler(self._on_error)

    # ---- lifecycle --------------------------------------------------------------------------

    async def _start(self) -> None:
        if self._running:
            return
        await self.app.initialize()
        await self._set_commands()
        await self.app.start()
        if self.app.updater is not None:
            # chat_member updates (admin changes) are only sent when asked for by name.
            await self.app.updater.start_polling(
                drop_pending_updates=False, allowed_updates=Update.ALL_TYPES
            )
        self._running = True
        log.info("telegram: polling as @%s", self.app.bot.username)

    async def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        if self.app.updater is not None and self.app.updater.running:
            await self.app.updater.stop()
        if self.app.running:
            await self.app.stop()
        await self.app.shutdown()

    async def _set_commands(self) -> None:
        """The command menu in the default language, and in the other for clients set to it.
        Each is its own request: one failing never skips the other."""
        default = self._settings.default_language
        other: Lang = "en" if default == "zh" else "zh"
        for lang, code in ((default, None), (other, other)):
            commands = [
                BotCommand(entry.name, entry.help.describe(lang)) for entry in self.router.registry
            ]
            try:
                await self.app.bot.set_my_commands(commands, language_code=code)
            except TelegramError as err:
                log.warning("telegram: set_my_commands (%s) failed: %s", code or "default", err)

    # ---- outgoing ---------------------------------------------------------------------------

    async def send(self, target: Actor, reply: Reply) -> Posted:
        chat_id = int(target.chat_id)
        thread = int(target.channel_id) if target.channel_id.lstrip("-").isdigit() else None
        return await self.post(_Chat(chat_id, thread), reply)

    async def post(self, outlet: _Chat, reply: Reply) -> Posted:
        bot = self.app.bot
        chat_id, thread_id = outlet.chat_id, outlet.thread_id
        editor, state = outlet.editor, outlet.state
        out = render(reply, self._actions)
        messages = list(out.messages)
        ids: list[str] = []
        if editor is not None and state is not None and editor.started and messages:
            first = messages.pop(0)
            state.markup = first.keyboard
            await editor.finish(first.html)
            ids.append(str(state.message_id))
        for message in messages:
            ids.append(str((await self._send_message(chat_id, thread_id, message)).message_id))
        for filename, data in out.photos:  # a picture (/graph) shows inline
            await bot.send_photo(
                chat_id, photo=data, filename=filename, message_thread_id=thread_id
            )
        for filename, data in out.files:
            await bot.send_document(
                chat_id, document=data, filename=filename, message_thread_id=thread_id
            )
        poll_id = poll_message_id = ""
        if out.poll is not None:
            question, options = out.poll
            try:
                sent = await bot.send_poll(
                    chat_id,
                    question,
                    options,
                    is_anonymous=False,
                    message_thread_id=thread_id,
                )
            except TelegramError:
                log.warning(
                    "telegram: native poll refused; /chapter vote still works", exc_info=True
                )
            else:
                poll_message_id = str(sent.message_id)
                if sent.poll is not None:
                    poll_id = sent.poll.id
                    self._remember_poll(poll_id, _PollTarget(chat_id, thread_id))
        return Posted(tuple(ids), poll_id, poll_message_id)

    async def edit(
        self, target: Actor, message_id: str, reply: Reply, *, poll_message_id: str = ""
    ) -> None:
        chat_id = int(target.chat_id)
        out = render(reply, self._actions)
        if not out.messages:
            return
        message = out.messages[-1]  # the one that carries the keyboard
        html = out.messages[0].html if len(out.messages) == 1 else message.html
        try:
            await self.app.bot.edit_message_text(
                html,
                chat_id=chat_id,
                message_id=int(message_id),
                parse_mode=ParseMode.HTML,
                reply_markup=message.keyboard,  # none: a closed ballot loses its buttons
                disable_web_page_preview=True,
            )
        except BadRequest as exc:
            if "not modified" not in str(exc).lower():
                raise
        if reply.poll is None and poll_message_id:
            try:
                await self.app.bot.stop_poll(chat_id, int(poll_message_id))
            except TelegramError:
                log.info("telegram: could not stop the native poll", exc_info=True)

    async def _send_message(
        self, chat_id: int, thread_id: int | None, message: TelegramMessage
    ) -> Message:
        sent: Message = await self.app.bot.send_message(
            chat_id,
            message.html,
            parse_mode=ParseMode.HTML,
            reply_markup=message.keyboard,
            message_thread_id=thread_id,
            disable_web_page_preview=True,
        )
        return sent

    def _remember_poll(self, poll_id: str, target: _PollTarget) -> None:
        self._polls[poll_id] = target
        while len(self._polls) > POLL_MEMORY:
            self._polls.popitem(last=False)

    @contextlib.asynccontextmanager
    async def _typing(self, chat_id: int, thread_id: int | None) -> AsyncIterator[None]:
        async def typing() -> None:
            try:
                await self.app.bot.send_chat_action(
                    chat_id, ChatAction.TYPING, message_thread_id=thread_id
                )
            except TelegramError:
                log.debug("telegram: chat action failed", exc_info=True)

        async def loop() -> None:
            while True:
                await asyncio.sleep(TYPING_EVERY_S)
                await typing()

        await typing()
        task = asyncio.create_task(loop())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # ---- incoming ---------------------------------------------------------------------------

    def _actor(
        self,
        chat: Chat,
        user: User | None,
        sender_chat: Chat | None = None,
        thread_id: int | None = None,
        topic_name: str = "",
    ) -> Actor:
        """Who spoke, and where: a forum topic is the actor's channel (with its name when the
        message says it), so what the bot posts later (a round's results) goes to the topic
        the round was opened in. A message sent on behalf of a chat (an anonymous admin posts
        as the group, a linked channel as itself) comes `from` a placeholder bot: the chat is
        the sender."""
        if sender_chat is not None:
            user_id, name = sender_chat.id, sender_chat.title or sender_chat.username or ""
        elif user is not None:
            user_id, name = user.id, user.full_name or user.username or ""
        else:
            user_id, name = chat.id, chat.title or ""
        kind: ChatKind = "group" if thread_id is None else "topic"
        return Actor(
            "telegram",
            str(chat.id),
            str(user_id),
            name,
            channel_id=str(thread_id) if thread_id is not None else "",
            lang=self._settings.default_language,  # the router applies the chat's setting
            channel_name=topic_name,
            kind="dm" if chat.type == ChatType.PRIVATE else kind,
        )

    def _member(
        self, chat: Chat, user_id: int, sender_chat: Chat | None = None
    ) -> Callable[[], Awaitable[MemberFacts]]:
        """The lookup the router calls when a command needs an admin (never otherwise)."""

        async def lookup() -> MemberFacts:
            if chat.type == ChatType.PRIVATE:
                return MemberFacts(private_chat=True)
            if sender_chat is not None:  # on behalf of a chat: no member to look up
                return MemberFacts(as_the_chat=sender_chat.id == chat.id)
            return await self.admins.member(chat.id, user_id)

        return lookup

    async def _fetch_admins(self, chat_id: int) -> dict[int, MemberFacts]:
        try:
            admins = await self.app.bot.get_chat_administrators(chat_id)
        except TelegramError as err:
            raise AdminUnknown(f"telegram getChatAdministrators: {err}") from err
        return {
            a.user.id: MemberFacts(
                owner=a.status == ChatMemberStatus.OWNER,
                administrator=a.status == ChatMemberStatus.ADMINISTRATOR,
            )
            for a in admins
        }

    async def _on_chat_member(self, update: Update, context: Context) -> None:
        """Someone was promoted, demoted, joined or left: the next check asks again."""
        chat = update.effective_chat
        if chat is not None:
            self.admins.forget(chat.id)

    async def _on_message(self, update: Update, context: Context) -> None:
        """A text, or a file or photo whose caption may be a command (`/ingest 书名`)."""
        message = update.effective_message
        chat = update.effective_chat
        if message is None or chat is None:
            return
        upload = None
        if message.document is not None:
            upload = self._upload(
                message.document.file_id, message.document.file_name, message.document.file_size
            )
        elif message.photo:  # its sizes, the largest last: a file named as Telegram serves it
            photo = message.photo[-1]
            upload = self._upload(photo.file_id, PHOTO_NAME, photo.file_size)
        text = message.text or message.caption or ""
        await self._run(chat, update.effective_user, message, text, upload)

    def _upload(self, file_id: str, name: str | None, size: int | None) -> Upload:
        async def read() -> bytes:
            try:
                file = await self.app.bot.get_file(file_id)
                return bytes(await file.download_as_bytearray())
            except TelegramError as err:
                raise UploadFailed(f"telegram: {err}") from err

        return Upload(name or "upload", size or 0, read)

    async def _run(
        self,
        chat: Chat,
        user: User | None,
        message: Message,
        text: str,
        upload: Upload | None,
    ) -> None:
        thread = _topic(message)
        actor = self._actor(chat, user, message.sender_chat, thread, _topic_name(message))
        state = _EditState()
        editor = self._editor(chat.id, thread, state)

        async def progress(partial: str) -> None:
            await editor.update(plain_preview(partial))

        async with contextlib.AsyncExitStack() as stack:

            async def ack() -> None:  # accepted: show "typing…" until the reply is sent
                await stack.enter_async_context(self._typing(chat.id, thread))

            async def reply_to(reply: Reply) -> Posted:
                await stack.aclose()  # "typing…" stops before the reply goes out
                return await self.post(_Chat(chat.id, thread, editor, state), reply)

            said = Line(
                text,
                bot_username=self.app.bot.username or self._settings.telegram_bot_username,
                private=chat.type == ChatType.PRIVATE,
            )
            await self.router.handle(
                Invocation(
                    actor,
                    said,
                    upload=upload,
                    progress=progress,
                    member=self._member(chat, int(actor.user_id), message.sender_chat),
                    ack=ack,
                    reply_to=reply_to,
                )
            )

    def _editor(self, chat_id: int, thread_id: int | None, state: _EditState) -> StreamingEditor:
        bot = self.app.bot

        async def send_first(text: str) -> None:
            sent = await bot.send_message(
                chat_id, text, parse_mode=ParseMode.HTML, message_thread_id=thread_id
            )
            state.message_id = sent.message_id

        async def edit(text: str) -> None:
            await bot.edit_message_text(
                text,
                chat_id=chat_id,
                message_id=state.message_id,
                parse_mode=ParseMode.HTML,
                reply_markup=state.markup,
                disable_web_page_preview=True,
            )

        return StreamingEditor(send_first, edit, self._edit_interval, clock=self.clock)

    async def _on_callback(self, update: Update, context: Context) -> None:
        query = update.callback_query
        if query is None:
            return
        chat = update.effective_chat
        action = self._actions.decode(query.data or "")
        if chat is None:
            await query.answer()
            return
        user = query.from_user
        message = query.message
        thread = _topic(message) if isinstance(message, Message) else None

        async def reply_to(reply: Reply) -> Posted:
            """A short answer is the button's own pop-up; anything more goes to the chat, and
            so does a short one when the press can no longer be answered (made while the bot
            was down: "query is too old")."""
            text = reply.plain()
            plain = not reply.buttons and not reply.poll and not reply.attachments
            if len(text) <= 190 and plain:
                if await _answered(query.answer(text, show_alert=reply.is_error)):
                    return Posted()
            else:
                await _answered(query.answer())
            return await self.post(_Chat(chat.id, thread), reply)

        await self.router.handle(
            Invocation(
                self._actor(chat, user, thread_id=thread),
                Press(action),
                member=self._member(chat, user.id),
                reply_to=reply_to,
            )
        )

    async def _on_poll_answer(self, update: Update, context: Context) -> None:
        """A native poll answered or withdrawn. The answer names only the poll; the ballot room
        maps it to its round (kept in SQLite, so answers after a restart still count)."""
        answer = update.poll_answer
        if answer is None or answer.user is None:
            return
        user = answer.user
        where = self._polls.get(answer.poll_id) or await self._recalled(answer.poll_id)
        kind: ChatKind = "group"
        if where is not None and where.thread_id is not None:
            kind = "topic"
        elif where is not None and where.chat_id > 0:  # a private chat's id is its user's
            kind = "dm"
        actor = Actor(
            "telegram",
            str(where.chat_id) if where is not None else "",
            str(user.id),
            user.full_name or user.username or "",
            lang=self._settings.default_language,
            kind=kind,
        )
        await self.router.handle(
            Invocation(
                actor,
                PollAnswer(answer.poll_id, tuple(answer.option_ids)),
                reply_to=self._errors_to(where),
            )
        )

    async def _recalled(self, poll_id: str) -> _PollTarget | None:
        """Where a poll this process no longer remembers was posted (before a restart, or
        beyond `POLL_MEMORY`), as the feature that posted it recorded it."""
        place = await self.router.poll_place(self.name, poll_id)
        if place is None:
            return None
        chat_id, thread = place
        try:
            target = _PollTarget(int(chat_id), int(thread) if thread else None)
        except ValueError:
            log.warning("telegram: poll %s recorded in chat %r", poll_id, chat_id)
            return None
        self._remember_poll(poll_id, target)
        return target

    def _errors_to(self, where: _PollTarget | None) -> Post:
        """A poll answer's reply: its success shows in the ballot's count, so only a refusal
        is said, in the poll's chat (when this process posted the poll)."""

        async def post(reply: Reply) -> Posted:
            if reply.is_error and where is not None:
                return await self.post(_Chat(where.chat_id, where.thread_id), reply)
            return Posted()

        return post

    async def _on_error(self, update: object, context: Context) -> None:
        log.error("telegram: update failed", exc_info=context.error)


async def _answered(answer: Awaitable[bool]) -> bool:
    """Whether a press was answered (its pop-up shown, its spinner stopped); False when it is
    too old to answer, which only costs the courtesy."""
    try:
        await answer
    except BadRequest as err:
        log.info("telegram: press not answered: %s", err)
        return False
    return True


def _topic(message: Message) -> int | None:
    """The forum topic a message was posted in; None for the General topic and for chats
    without topics (a reply thread in a plain group is not a topic)."""
    return message.message_thread_id if message.is_topic_message else None


def _topic_name(message: Message) -> str:
    """The name of the forum topic a message was posted in, when it says: a message in a topic
    that replies to nothing else replies to the topic's creation, which names it."""
    created = message.reply_to_message.forum_topic_created if message.reply_to_message else None
    return created.name if created is not None and _topic(message) is not None else ""


@dataclass(slots=True)
class _EditState:
    message_id: int = 0
    markup: InlineKeyboardMarkup | None = None
