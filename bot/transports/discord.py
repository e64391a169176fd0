"""Discord transport (discord.py): slash commands generated from the command registry,
button clicks back to the router as a `Press`, replies rendered by `bot.render.discord`.

Thin on purpose: parsing, validation, permissions and limits live in the router; this module
turns interactions into `Invocation`s for `Router.handle` and replies into interaction
responses.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any, Optional

import discord
from discord import app_commands

from bot.actor import Actor, ChatKind
from bot.admin import MemberFacts
from bot.i18n import catalog
from bot.registry import Command, Entry, Group, Param, Suggest, Upload, UploadFailed
from bot.render.discord import (
    CUSTOM_ID_LIMIT,
    LIMIT,
    NO_MENTIONS,
    DiscordMessage,
    discord_files,
    esc,
    render,
)
from bot.render.stream import DISCORD_EDIT_INTERVAL_S, ActionTable, StreamingEditor
from bot.reply import Attachment, Block, Posted, Reply
from bot.router import Invocation, Line, Press, Router, Slash
from bot.settings import Settings
from bot.transports.base import ChatTransport, required_token
from kernel.i18n import Lang
from retrieval.clock import Clock

log = logging.getLogger(__name__)

DESCRIPTION_LIMIT = 100
# A refused option at least this long is given back as typed (`_giving_back`).
GIVE_BACK_CHARS = 100
TYPED_FILE = "typed.txt"

T = catalog("discord")


def _desc(text: str) -> str:
    return text if len(text) <= DESCRIPTION_LIMIT else text[: DESCRIPTION_LIMIT - 1] + "…"


def _place(channel: object) -> tuple[str, str]:
    """(the channel a thread is in, the place's name) of an interaction's channel; "" for
    what a channel does not have (a DM has no name, only a thread a parent)."""
    if isinstance(channel, discord.Thread):
        return str(channel.parent_id), channel.name
    if isinstance(channel, discord.abc.GuildChannel):
        return "", channel.name
    return "", ""


def _loc(zh: str, en: str) -> app_commands.locale_str:
    """Chinese text with its English translation riding along (see `_Translator`)."""
    return app_commands.locale_str(_desc(zh), en=_desc(en))


class _Translator(app_commands.Translator):
    """English localisations for command and option descriptions and choice names."""

    async def translate(
        self,
        string: app_commands.locale_str,
        locale: discord.Locale,
        context: app_commands.TranslationContextTypes,
    ) -> str | None:
        if str(locale).startswith("en"):
            en = string.extras.get("en")
            return str(en) if en else None
        return None


def lang_of(locale: discord.Locale | str | None, default: Lang) -> Lang:
    code = str(locale or "")
    if code.startswith("zh"):
        return "zh"
    if code.startswith("en"):
        return "en"
    return default


class ActionButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"(?P<action>.+)"):
    """A button whose custom_id is the reply's action: survives restarts (no stored view)."""

    def __init__(self, label: str, custom_id: str) -> None:
        super().__init__(
            discord.ui.Button(label=label, custom_id=custom_id, style=discord.ButtonStyle.secondary)
        )

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[discord.Client],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> ActionButton:
        label = item.label if isinstance(item, discord.ui.Button) else None
        return cls(label or "…", match["action"])

    async def callback(self, interaction: discord.Interaction[discord.Client]) -> None:
        client = interaction.client
        if isinstance(client, _Client):
            await client.transport.on_press(interaction, self.item.custom_id or "")


def _send_kwargs(message: DiscordMessage, *, files_key: str = "files") -> dict[str, Any]:
    """A message's buttons and files as discord.py keyword arguments (send, followup, edit)."""
    kwargs: dict[str, Any] = {"allowed_mentions": NO_MENTIONS}
    if message.buttons:
        view = discord.ui.View(timeout=None)
        for label, custom_id in message.buttons:
            view.add_item(ActionButton(label, custom_id))
        kwargs["view"] = view
    if message.files:
        kwargs[files_key] = discord_files(message)
    return kwargs


class _Client(discord.AutoShardedClient):
    """Sharded (Discord refuses an unsharded bot in more than 2,500 servers): the shard count
    and this process's shards come from the settings, Discord's recommendation when unset
    (docs/SCALE.md)."""

    def __init__(self, transport: DiscordTransport, settings: Settings) -> None:
        intents, count, ids = (
            discord.Intents.default(),
            settings.discord_shard_count,
            settings.shard_ids,
        )
        if ids is None:  # every shard (of Discord's recommended count when none is set)
            super().__init__(intents=intents, allowed_mentions=NO_MENTIONS, shard_count=count)
        else:
            super().__init__(
                intents=intents,
                allowed_mentions=NO_MENTIONS,
                shard_count=count,
                shard_ids=list(ids),
            )
        self.transport = transport
        self.tree: app_commands.CommandTree[_Client] = app_commands.CommandTree(self)

    async def setup_hook(self) -> None:
        await self.transport.setup()

    async def on_message(self, message: discord.Message) -> None:
        # The default intents deliver DMs with their content (message content is a privileged
        # intent only in servers); server messages are ignored by the transport anyway.
        await self.transport.on_message(message)


Callback = Callable[..., Coroutine[Any, Any, None]]


@dataclass(slots=True)
class _EditState:
    final: DiscordMessage | None = None  # the first message of the reply, once it is known
    original_id: int | None = None  # the interaction's own message, once edited


@dataclass(frozen=True, slots=True)
class _Answer:
    """An interaction to answer: at once when it was refused before its acknowledgement,
    else after its deferral (the streamed message first); `private` for a button press."""

    interaction: discord.Interaction[Any]
    editor: StreamingEditor | None = None
    state: _EditState | None = None
    private: bool = False


# Where a reply goes: an interaction, or a channel (server channel or DM) for unsolicited ones.
DiscordOutlet = _Answer | discord.abc.Messageable


class DiscordTransport(ChatTransport[DiscordOutlet]):
    name = "discord"

    def __init__(self, router: Router, settings: Settings, *, clock: Clock | None = None) -> None:
        super().__init__(router, clock=clock)
        self._token = required_token(settings.discord_token, "DISCORD_TOKEN")
        self._settings = settings
        self._actions = ActionTable(CUSTOM_ID_LIMIT)
        self.client = _Client(self, settings)
        self.tree = self.client.tree
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self.edit_interval_s = DISCORD_EDIT_INTERVAL_S
        self.synced: list[app_commands.AppCommand] = []
        for entry in router.registry:
            self.tree.add_command(self._build(entry, (entry.name,)))
        self.tree.error(self._on_tree_error)

    # ---- lifecycle --------------------------------------------------------------------------

    async def _start(self) -> None:
        if self._started:
            return
        await self.client.login(self._token.get_secret_value())  # runs setup(): command sync
        self._task = asyncio.create_task(self._connect(), name="discord-gateway")
        self._started = True

    async def _connect(self) -> None:
        try:
            await self.client.connect(reconnect=True)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("discord: gateway connection ended")

    async def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        await self.client.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def setup(self) -> None:
        """Called by discord.py after login: translations, buttons, command sync."""
        await self.tree.set_translator(_Translator())
        self.client.add_dynamic_items(ActionButton)
        try:
            if self._settings.discord_guild_id:
                guild = discord.Object(id=self._settings.discord_guild_id)
                self.tree.copy_global_to(guild=guild)
                self.synced = await self.tree.sync(guild=guild)
            else:
                self.synced = await self.tree.sync()
        except discord.HTTPException:
            log.exception("discord: command sync failed")
        log.info("discord: %d commands synced", len(self.synced))

    async def _on_tree_error(
        self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError
    ) -> None:
        lang = await self._chat_lang(interaction)
        outdated = isinstance(
            error, app_commands.CommandSignatureMismatch | app_commands.CommandNotFound
        )
        if not outdated:
            log.error("discord: command failed", exc_info=error)
        reply = Reply.error(T(lang, "outdated" if outdated else "failed"), lang=lang)
        with contextlib.suppress(discord.HTTPException):
            if interaction.response.is_done():
                await interaction.followup.send(
                    reply.plain(), ephemeral=True, allowed_mentions=NO_MENTIONS
                )
            else:
                await self.post(_Answer(interaction), reply)

    async def _chat_lang(self, interaction: discord.Interaction[Any]) -> Lang:
        """The server's language setting, as every command reply uses; the user's own client
        locale only if the setting cannot be read (the notice must still go out)."""
        try:
            return (await self.router.in_chat_language(self.actor(interaction))).lang
        except Exception:
            log.warning("discord: chat language unavailable", exc_info=True)
            return lang_of(interaction.locale, self._settings.default_language)

    # ---- registry → app commands ------------------------------------------------------------

    def _build(
        self, entry: Entry, path: tuple[str, ...]
    ) -> app_commands.Command[Any, ..., None] | app_commands.Group:
        description = _loc(entry.help.zh, entry.help.en)
        if isinstance(entry, Group):
            group = app_commands.Group(name=entry.name, description=description)
            for child in entry.children:
                group.add_command(self._build(child, (*path, child.name)))
            return group
        return app_commands.Command(
            name=entry.name, description=description, callback=self._callback(entry, path)
        )

    def _callback(self, command: Command[Any], path: tuple[str, ...]) -> Callback:
        async def callback(interaction: discord.Interaction[_Client], **options: Any) -> None:
            await self.on_command(interaction, path, options)

        parameters = [
            inspect.Parameter(
                "interaction",
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=discord.Interaction,
            )
        ]
        for param in command.params:
            annotation = _annotation(param)
            parameters.append(
                inspect.Parameter(
                    param.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=annotation if param.required else Optional[annotation],  # noqa: UP045
                    default=inspect.Parameter.empty if param.required else None,
                )
            )
        # The parameters discord.py reads from the callback's signature (PEP 362's
        # `__signature__`: the registry, not this function's code, lists them).
        vars(callback)["__signature__"] = inspect.Signature(parameters)
        callback = app_commands.describe(**{p.name: _loc(p.zh, p.en) for p in command.params})(
            callback
        )
        choices = {
            p.name: [app_commands.Choice(name=c, value=c) for c in p.choices]
            for p in command.params
            if p.kind == "choice"
        }
        if choices:
            callback = app_commands.choices(**choices)(callback)
        suggest = {
            p.name: _autocomplete(p.suggest, self.actor) for p in command.params if p.suggest
        }
        if suggest:
            callback = app_commands.autocomplete(**suggest)(callback)
        return callback

    # ---- interactions -----------------------------------------------------------------------

    def actor(self, interaction: discord.Interaction[Any]) -> Actor:
        user = interaction.user
        guild_id = interaction.guild_id
        roles: tuple[str, ...] = ()
        if isinstance(user, discord.Member):
            roles = tuple(r.name for r in user.roles if not r.is_default())
        parent, name = _place(interaction.channel)
        return Actor(
            "discord",
            str(guild_id) if guild_id else f"dm:{user.id}",
            str(user.id),
            user.display_name,
            channel_id=str(interaction.channel_id or ""),
            roles=roles,
            lang=self._settings.default_language,  # the router applies the server's setting
            parent_id=parent,
            channel_name=name,
            kind=_kind(interaction),
        )

    @staticmethod
    def member(interaction: discord.Interaction[Any]) -> MemberFacts:
        """What Discord says about the member; `bot.admin.AdminPolicy` decides what it means."""
        user = interaction.user
        if not isinstance(user, discord.Member):  # a DM: the user's own chat
            return MemberFacts(private_chat=True)
        perms = interaction.permissions
        guild = interaction.guild
        return MemberFacts(
            owner=guild is not None and guild.owner_id == user.id,
            administrator=perms.administrator,
            manage_server=perms.manage_guild,
            roles=tuple(r.name for r in user.roles if not r.is_default()),
        )

    async def on_command(
        self, interaction: discord.Interaction[Any], path: tuple[str, ...], options: dict[str, Any]
    ) -> None:
        raw: dict[str, str | int | None] = {}
        upload: Upload | None = None
        for name, value in options.items():
            if isinstance(value, discord.Attachment):
                upload = _upload(value)
            elif value is not None:
                raw[name] = value if isinstance(value, str | int) else str(value)
        state = _EditState()
        editor = self._editor(interaction, state)

        async def progress(partial: str) -> None:
            text = esc(partial)
            await editor.update(text if len(text) <= LIMIT else text[: LIMIT - 1] + "…")

        async def ack() -> None:
            await interaction.response.defer(thinking=True)

        async def member() -> MemberFacts:
            return self.member(interaction)

        post = self.reply_to(_Answer(interaction, editor, state))

        async def reply_to(reply: Reply) -> Posted:
            return await post(_giving_back(reply, raw))

        await self.router.handle(
            Invocation(
                self.actor(interaction),
                Slash(path, raw),
                upload=upload,
                progress=progress,
                member=member,
                ack=ack,
                reply_to=reply_to,
            )
        )

    async def on_message(self, message: discord.Message) -> None:
        """A message typed in a DM to the bot gets what a private chat gets from the router (a
        one-line pointer to /help for plain text or an unknown command); a file sent with it
        is the command's file, as a Telegram caption's document is (`/ingest 书名` with the
        book attached). Server channels and bots (this one included) are never answered:
        there, commands are interactions."""
        if message.guild is not None or message.author.bot:
            return
        if message.type not in (discord.MessageType.default, discord.MessageType.reply):
            return
        me = self.client.user
        actor = Actor(
            "discord",
            f"dm:{message.author.id}",
            str(message.author.id),
            message.author.display_name,
            channel_id=str(message.channel.id),
            lang=self._settings.default_language,
            kind="dm",
        )

        async def member() -> MemberFacts:
            return MemberFacts(private_chat=True)

        said = Line(message.content, bot_username=me.name if me is not None else "", private=True)
        upload = _upload(message.attachments[0]) if message.attachments else None
        await self.router.handle(
            Invocation(
                actor, said, upload=upload, member=member, reply_to=self.reply_to(message.channel)
            )
        )

    async def on_press(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        action = self._actions.decode(custom_id)
        await interaction.response.defer(ephemeral=True, thinking=True)

        async def member() -> MemberFacts:
            return self.member(interaction)

        await self.router.handle(
            Invocation(
                self.actor(interaction),
                Press(action),
                member=member,
                reply_to=self.reply_to(_Answer(interaction, private=True)),
            )
        )

    def _editor(self, interaction: discord.Interaction[Any], state: _EditState) -> StreamingEditor:
        async def edit(text: str) -> None:
            kwargs: dict[str, Any] = {"allowed_mentions": NO_MENTIONS}
            if state.final is not None:
                kwargs = _send_kwargs(state.final, files_key="attachments")
            edited = await interaction.edit_original_response(content=text, **kwargs)
            state.original_id = edited.id

        return StreamingEditor(edit, edit, self.edit_interval_s, clock=self.clock)

    # ---- delivery ---------------------------------------------------------------------------

    async def post(self, outlet: DiscordOutlet, reply: Reply) -> Posted:
        messages = render(reply, self._actions)
        if not isinstance(outlet, _Answer):
            return await self._send_in(outlet, messages)
        interaction = outlet.interaction
        if outlet.private:  # a button press: deferred privately, answered privately
            for message in messages:
                await self._followup(interaction, message, ephemeral=True)
            return Posted()
        if not interaction.response.is_done():  # refused before acknowledging: answer at once
            return await self._respond_now(interaction, reply, messages)
        return await self._after_deferral(outlet, reply, messages)

    async def _respond_now(
        self, interaction: discord.Interaction[Any], reply: Reply, messages: list[DiscordMessage]
    ) -> Posted:
        first, rest = messages[0], messages[1:]
        ephemeral = reply.is_error
        sent = await interaction.response.send_message(
            first.content or "…", ephemeral=ephemeral, **_send_kwargs(first)
        )
        ids: list[str] = []
        if isinstance(sent.resource, discord.InteractionMessage):
            ids.append(str(sent.resource.id))
        for message in rest:
            ids.append(str((await self._followup(interaction, message, ephemeral=ephemeral)).id))
        return Posted() if ephemeral else Posted(tuple(ids))

    async def _after_deferral(
        self, answer: _Answer, reply: Reply, messages: list[DiscordMessage]
    ) -> Posted:
        interaction, editor, state = answer.interaction, answer.editor, answer.state
        if reply.is_error:
            # The deferred "thinking…" message is public; errors go privately instead. While
            # it is loading, Discord takes the first follow-up as its answer (public, whatever
            # its flags say), and once it is deleted no follow-up is accepted (10008). So:
            # resolve it, say the error privately, then remove it.
            await interaction.edit_original_response(content="…")
            for message in messages:
                await self._followup(interaction, message, ephemeral=True)
            with contextlib.suppress(discord.HTTPException):
                await interaction.delete_original_response()
            return Posted()
        ids: list[str] = []
        if editor is not None and state is not None and editor.started:
            state.final = messages[0]
            await editor.finish(messages[0].content or "…")
            if state.original_id is not None:
                ids.append(str(state.original_id))
            messages = messages[1:]
        for message in messages:
            ids.append(str((await self._followup(interaction, message, ephemeral=False)).id))
        return Posted(tuple(ids))

    async def _send_in(
        self, channel: discord.abc.Messageable, messages: list[DiscordMessage]
    ) -> Posted:
        ids = [
            str((await channel.send(message.content or "…", **_send_kwargs(message))).id)
            for message in messages
        ]
        return Posted(tuple(ids))

    async def _followup(
        self, interaction: discord.Interaction[Any], message: DiscordMessage, *, ephemeral: bool
    ) -> discord.WebhookMessage:
        return await interaction.followup.send(
            message.content or "…", ephemeral=ephemeral, wait=True, **_send_kwargs(message)
        )

    async def edit(
        self, target: Actor, message_id: str, reply: Reply, *, poll_message_id: str = ""
    ) -> None:
        channel = await self._channel(target)
        messages = render(reply, self._actions)
        message = messages[-1]  # the one that carries the buttons
        content = messages[0].content if len(messages) == 1 else message.content
        kwargs = _send_kwargs(message, files_key="attachments")
        kwargs.setdefault("view", None)  # no buttons any more: the ballot is closed
        # A bot may edit its own non-ephemeral messages (interaction followups included) in
        # the channel at any time; the interaction token would expire after 15 minutes.
        await channel.get_partial_message(int(message_id)).edit(content=content or "…", **kwargs)

    # ---- unsolicited ------------------------------------------------------------------------

    async def _channel(self, target: Actor) -> Any:
        if target.channel_id:
            channel_id = int(target.channel_id)
            return self.client.get_channel(channel_id) or await self.client.fetch_channel(
                channel_id
            )
        if target.chat_id.startswith("dm:"):
            user = await self.client.fetch_user(int(target.chat_id.removeprefix("dm:")))
            return user.dm_channel or await user.create_dm()
        raise ValueError(f"no channel to post to for chat {target.chat_id}")

    async def send(self, target: Actor, reply: Reply) -> Posted:
        return await self.post(await self._channel(target), reply)


def _giving_back(reply: Reply, raw: dict[str, str | int | None]) -> Reply:
    """A refusal with every long option as typed attached: Discord keeps nothing of a sent
    slash command, and a long text refused (too long, not allowed now) would have to be typed
    again from nothing. Short ones are easy to type again."""
    typed = [v for v in raw.values() if isinstance(v, str) and len(v.strip()) >= GIVE_BACK_CHARS]
    if not reply.is_error or not typed:
        return reply
    kept = Attachment(TYPED_FILE, "\n\n".join(typed).encode(), "text/plain")
    note = Block(T(reply.lang, "typed_kept"), "note")
    return replace(reply, blocks=(*reply.blocks, note), attachments=(*reply.attachments, kept))


def _upload(attachment: discord.Attachment) -> Upload:
    async def read() -> bytes:
        try:
            return await attachment.read()
        except discord.HTTPException as err:
            raise UploadFailed(f"discord: {err}") from err

    return Upload(attachment.filename, attachment.size, read)


def _kind(interaction: discord.Interaction[Any]) -> ChatKind:
    """A DM, a post in a forum channel (a forum topic), or a server's channel."""
    if interaction.guild_id is None:
        return "dm"
    channel = interaction.channel
    if isinstance(channel, discord.Thread) and isinstance(channel.parent, discord.ForumChannel):
        return "topic"
    return "group"


def _autocomplete(
    suggest: Suggest, actor: Callable[[discord.Interaction[Any]], Actor]
) -> Callable[[discord.Interaction[Any], str], Coroutine[Any, Any, list[app_commands.Choice[str]]]]:
    async def complete(
        interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        offered = suggest(current, actor(interaction))
        return [app_commands.Choice(name=n, value=v) for n, v in offered][:25]

    return complete


def _annotation(param: Param) -> Any:
    if param.kind == "int":
        return app_commands.Range[int, 1, 1_000_000]
    if param.kind == "file":
        return discord.Attachment
    return str
