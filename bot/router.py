"""Invocations in, what was posted out: every transport reaches the registry through here.

A transport hands in one `Invocation` (who, what they said, and where the reply goes) and gets
back what it posted (`Posted`), as an httpx transport takes a request and returns a response:

    transport ──Invocation──▶ Router.handle ──reply──▶ invocation.reply_to (the transport's
    `post`) ──Posted──▶ the registry's `posted` hooks (e.g. the ballot room records a ballot)
                                                  ──▶ Posted back to the transport

What was said is one of: a raw `Line` (console, Telegram, a Discord DM:
`/ask@baibao_bot 什么是经纶？`), a `Slash` command with its options already split (Discord), a
`Press` of a button or keyboard key, a native poll's `PollAnswer`. A command goes through the
same steps, once:

    resolve the command → an `Attempt` through the checks: validate each parameter →
    the upload's type and declared size → permission (`bot.permissions`: whether the bot serves
    this chat, then the table's verdict for the asker's role here; the platform is asked who
    the member is only when a chat admin and a member may differ) → rate limit; then `ack()` →
    read the upload → `parse` into a typed request → `run`

Every failure becomes a `Reply` in the chat's language: nothing raises out of the router.
Replies produced before `ack` are quick refusals (Discord answers them privately at once).

The router also owns the way out for what no one asked (`send`: a round's result; `edit`: a
ballot's running count): each transport attaches itself when it is built (`attach`), and
`start` refuses a transport the router does not hold (`NotAttached`).

Language: the chat's setting (`/settings language`, default `DEFAULT_LANGUAGE`), except that
words clearly written in the other language (an English question in a Chinese group) are
answered in theirs. The sender's app language plays no part: a group reads one language. A
button goes on in the language of the reply it is on: the router marks the actions of a reply
written in another language than the chat's (`en|cite:2:…`) and answers their press in it.

Silence: in a group the bot answers only its own commands (a known command, or any command
addressed `/x@bot`); plain talk and other bots' commands get nothing. A private chat always
gets an answer: unknown commands and plain text get a one-line pointer to /help.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, assert_never

from bot.activity import Activity
from bot.actor import Actor
from bot.admin import AdminUnknown, MemberLookup
from bot.budget import Payer, paying
from bot.changes import Change
from bot.i18n import T, catalog
from bot.parsing import (
    SLASHES,
    RawArgs,
    addressed,
    first_word,
    parse_args,
    split_text_command,
    validate,
)
from bot.permissions import ACTIONS, POLL_ANSWER, Permissions, refused
from bot.ratelimit import RateLimiter
from bot.registry import (
    Call,
    Command,
    Entry,
    File,
    Group,
    Param,
    PollAnswer,
    Registry,
    Upload,
    UploadFailed,
    UsageError,
    Values,
)
from bot.reply import Button, Posted, Progress, Reply
from kernel.i18n import Lang, detect_language
from retrieval.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)
P = catalog("permissions")

# Called once a command is accepted, before slow work (Discord: defer the interaction).
Ack = Callable[[], Awaitable[None]]
# Where an invocation's reply goes: the transport posts it there and says what it posted.
Post = Callable[[Reply], Awaitable[Posted]]


@dataclasses.dataclass(frozen=True, slots=True)
class Line:
    """A raw chat line: `/ask@baibao_bot 什么是经纶？`, or plain talk. In a group (`private`
    False) only our own commands are answered; `bot_username` tells `/x@us` from `/x@them`."""

    text: str
    bot_username: str = ""
    private: bool = True


@dataclasses.dataclass(frozen=True, slots=True)
class Slash:
    """A slash command with its options already split (Discord): the path names the command."""

    path: tuple[str, ...]
    options: RawArgs


@dataclasses.dataclass(frozen=True, slots=True)
class Press:
    """A button or keyboard key coming back: its action, `f"{prefix}:{payload}"`."""

    action: str


# What a member did, as a transport saw it.
Said = Line | Slash | Press | PollAnswer


@dataclasses.dataclass(frozen=True, slots=True)
class Invocation:
    """Everything a transport hands the router about one thing a member did: who (`actor`,
    in the transport's default language: the router applies the chat's), what (`said`), the
    file that came with it, where progress streams, how to look the member's standing up
    (only asked when a command needs an admin), what to do once a command is accepted, and
    where the reply goes (`reply_to`: required by `handle`; `answer` only returns it)."""

    actor: Actor
    said: Said
    upload: Upload | None = None
    progress: Progress | None = None
    member: MemberLookup | None = None
    ack: Ack | None = None
    reply_to: Post | None = None


class Transport(Protocol):
    """What the router needs of an attached transport: its platform's name, and the way out
    for what no one asked (`bot.transports.base.ChatTransport`)."""

    name: str

    async def send(self, target: Actor, reply: Reply) -> Posted: ...

    async def edit(
        self, target: Actor, message_id: str, reply: Reply, *, poll_message_id: str = ""
    ) -> None: ...


class NotAttached(RuntimeError):
    """A transport the router does not hold was started: its replies would post, but nothing
    unasked (a round's result, a ballot's count) could ever reach its chats."""


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One command call on its way through the router's checks. Each check returns it (perhaps
    with more known: validated values, the admin flag) or the Reply that refuses it."""

    actor: Actor
    command: Command[Any]
    raw: RawArgs
    path: tuple[str, ...] = ()  # the command's names from the top (`("ingest", "delete")`)
    upload: Upload | None = None
    progress: Progress | None = None
    member: MemberLookup | None = None
    ack: Ack | None = None
    values: Mapping[str, str | int] = dataclasses.field(default_factory=dict)
    subject: str = ""  # its row in the permission table, once checked

    @property
    def lang(self) -> Lang:
        return self.actor.lang

    @property
    def file(self) -> tuple[Param, Upload] | None:
        """The command's file parameter and the upload for it, when there are both."""
        param = self.command.file_param
        if param is None or self.upload is None:
            return None
        return param, self.upload


# A check step (discord.py's `app_commands.check`): pass the attempt on, or refuse it.
Check = Callable[[Attempt], Awaitable[Attempt | Reply]]


class ChatLanguages(Protocol):
    """Where a chat's language setting comes from (`bot.chats.ChatSettings`)."""

    async def language(self, platform: str, chat_id: str) -> Lang: ...


class ChangeRecorder(Protocol):
    """Where changes are logged (`bot.changes.ChangeLog`)."""

    def stamp(self) -> str: ...

    async def record(self, change: Change) -> None: ...


class Router:
    """Turns invocations into command runs and replies. Holds no platform code."""

    def __init__(
        self,
        registry: Registry,
        *,
        limiter: RateLimiter | None = None,
        permissions: Permissions | None = None,
        chats: ChatLanguages | None = None,
        activity: Activity | None = None,
        clock: Clock = SYSTEM_CLOCK,
        changes: ChangeRecorder | None = None,
        budgeted: bool = False,
    ) -> None:
        """Without `chats`, `Actor.lang` as the transport set it is the chat's language.
        `activity` records each command's run (background work waits for a quiet moment);
        `clock` is the process's (the composition root's): the transports' throttles read it.
        `changes`: where every change that succeeded is logged (`bot.changes`). `budgeted`:
        the model is behind daily budgets, and each command's calls are its asker's
        (`bot.budget.paying`; an operator's are nobody's)."""
        self._changes = changes
        self._budgeted = budgeted
        self.registry = registry
        self.clock = clock
        self.activity = activity or Activity()
        self._transports: dict[str, Transport] = {}
        self._limiter = limiter or RateLimiter()
        self.permissions = permissions or Permissions()
        self._chats = chats
        self._checks: tuple[Check, ...] = (
            self._validate,
            self._check_upload,
            self._check_permission,
            self._check_rate,
        )

    # ---- entry points -------------------------------------------------------------------

    async def handle(self, inv: Invocation) -> Posted:
        """Answer `inv`, post the reply where it goes, run the `posted` hooks; what was
        posted (nothing when the router stays quiet)."""
        if inv.reply_to is None:
            raise ValueError("an invocation to handle says where its reply goes (reply_to)")
        reply = await self.answer(inv)
        if reply is None:
            return Posted()
        reply = await self._buttons_in_language(inv.actor, reply)
        return await self._delivered(inv.actor, reply, await inv.reply_to(reply))

    async def answer(self, inv: Invocation) -> Reply | None:
        """The reply to `inv`, posted nowhere (one-shot callers print it). None means stay
        quiet (see the module docstring)."""
        said = inv.said
        match said:
            case Line():
                return await self._line(inv, said)
            case Slash():
                return await self._slash(inv, said)
            case Press():
                return await self._press(inv.actor, said.action, inv.member)
            case PollAnswer():
                return await self._poll_answer(inv.actor, said)
            case _:
                assert_never(said)

    async def _line(self, inv: Invocation, line: Line) -> Reply | None:
        resolved = await self._resolve_text(inv.actor, line.text, line.bot_username, line.private)
        if not isinstance(resolved, tuple):
            return resolved
        actor, path, entry, raw = resolved
        return await self._run(self._attempt(inv, actor, path, entry, raw))

    @staticmethod
    def _attempt(
        inv: Invocation, actor: Actor, path: tuple[str, ...], command: Command[Any], raw: RawArgs
    ) -> Attempt:
        return Attempt(actor, command, raw, path, inv.upload, inv.progress, inv.member, inv.ack)

    async def parse_text(self, actor: Actor, line: str) -> tuple[Actor, Any] | Reply:
        """A command line parsed exactly as `answer` parses a `Line` (the same resolution,
        parameter checks and `parse`), without running it: (the actor in the language of the
        user's words, the typed request), or the usage Reply the chat would get. For one-shot
        callers such as `baibao ask --json`; a command that takes a file cannot be parsed here."""
        resolved = await self._resolve_text(actor, line, "", True)
        if resolved is None:
            lang = self._lang(actor, line)
            return Reply.error(T(lang, "not_a_command"), lang=lang)
        if isinstance(resolved, Reply):
            return resolved
        actor, _, command, raw = resolved
        try:
            values = validate(command, raw, has_file=False)
            return actor, command.parse(Values(dict(values)))
        except UsageError as err:
            return self._usage(actor.lang, command, err)

    async def takes_file(self, actor: Actor, line: str) -> bool:
        """Whether the command `line` names takes a file (the console reads `@path` as one
        only for those: a chat would attach it)."""
        resolved = await self._resolve_text(actor, line, "", True)
        return isinstance(resolved, tuple) and resolved[2].file_param is not None

    async def _resolve_text(
        self, actor: Actor, line: str, bot_username: str, private: bool
    ) -> tuple[Actor, tuple[str, ...], Command[Any], RawArgs] | Reply | None:
        """A raw line → (actor in the words' language, the command's path, the command, its
        raw arguments), or the error Reply, or None to stay quiet."""
        actor = await self.in_chat_language(actor)
        split = split_text_command(line, bot_username)
        if split is None:
            if not private or line.strip().startswith(SLASHES):
                return None
            lang = self._lang(actor, line)
            return Reply.error(T(lang, "not_a_command"), lang=lang)
        name, rest = split
        entry = self.registry.get(name)
        if entry is None and not private and not addressed(line):
            return None  # `/x` in a group may be another bot's command
        path: tuple[str, ...] = (entry.name if entry is not None else name,)
        while isinstance(entry, Group):
            word, after = first_word(rest)
            child = entry.child(word or entry.bare)
            if child is None and entry.fallback() is not None:
                child, after = entry.fallback(), rest
            if child is None:
                return self._sub_error(self._lang(actor, after), entry, word)
            entry, rest, path = child, after, (*path, child.name)
        actor = self._with_lang(actor, self._lang(actor, rest))
        if entry is None:
            return Reply.error(T(actor.lang, "unknown_command", name=name[:40]), lang=actor.lang)
        return actor, path, entry, parse_args(entry, rest)

    async def _slash(self, inv: Invocation, slash: Slash) -> Reply:
        """Structured form (Discord options): the path names the command, `options` its
        arguments."""
        path, raw = slash.path, slash.options
        actor = await self.in_chat_language(inv.actor)
        words = " ".join(v for v in raw.values() if isinstance(v, str))
        actor = self._with_lang(actor, self._lang(actor, words))
        lang = actor.lang
        entry: Entry | None = self.registry.get(path[0]) if path else None
        if entry is None:
            return Reply.error(T(lang, "unknown_command", name=(path or ("",))[0][:40]), lang=lang)
        for part in path[1:]:
            if not isinstance(entry, Group):
                break
            child = entry.child(part)
            if child is None:
                return self._sub_error(lang, entry, part)
            entry = child
        if isinstance(entry, Group):
            return self._sub_error(lang, entry, "")
        return await self._run(self._attempt(inv, actor, tuple(path), entry, raw))

    async def _press(self, actor: Actor, action: str, member: MemberLookup | None) -> Reply:
        """A button / keyboard choice coming back (`f"{prefix}:{payload}"`), decoded by the
        action its feature registered, allowed by the table's row for it."""
        actor = await self.in_chat_language(actor)
        lang, action = _unmarked(action)
        actor = self._with_lang(actor, lang or actor.lang)
        prefix, _, payload = action.partition(":")
        codec = self.registry.action(prefix)
        request = codec.decode(payload) if codec is not None else None
        if codec is None or request is None:
            return Reply.error(T(actor.lang, "unknown_action"), lang=actor.lang)
        checked = await self._permitted(actor, ACTIONS.get(prefix, f"action {prefix}"), member)
        if isinstance(checked, Reply):
            return checked
        actor = checked
        try:
            with self.activity.command():
                return await codec.run(Call(actor), request)
        except Exception:
            return self._internal_error(actor.lang, f"action {prefix}")

    async def _poll_answer(self, actor: Actor, answer: PollAnswer) -> Reply:
        """A native poll's answer, to the handler registered for them."""
        actor = await self.in_chat_language(actor)
        run = self.registry.poll_answers
        if run is None:
            return Reply.error(T(actor.lang, "unknown_action"), lang=actor.lang)
        checked = await self._permitted(actor, POLL_ANSWER, None)
        if isinstance(checked, Reply):
            return checked
        actor = checked
        try:
            with self.activity.command():
                return await run(Call(actor), answer)
        except Exception:
            return self._internal_error(actor.lang, "poll answer")

    async def poll_place(self, platform: str, poll_id: str) -> tuple[str, str] | None:
        """Where `platform`'s native poll `poll_id` was posted (chat id, forum topic or ""), as
        the feature that posted it recorded it; None when unknown. For a transport that does
        not remember (a poll posted before a restart): an answer names no chat, and one whose
        chat is unknown is refused wherever only listed chats are served."""
        find = self.registry.poll_place
        if find is None:
            return None
        try:
            return await find(platform, poll_id)
        except Exception:
            log.exception("where %s poll %s was posted could not be read", platform, poll_id)
            return None

    # ---- the way out ------------------------------------------------------------------------

    def attach(self, transport: Transport) -> None:
        """`transport` serves its platform's chats: what no one asked reaches them through it.
        A later transport of the same platform replaces it (the earlier one cannot start)."""
        self._transports[transport.name] = transport

    def attached(self, transport: Transport) -> bool:
        return self._transports.get(transport.name) is transport

    def ensure_attached(self, transport: Transport) -> None:
        """Raise `NotAttached` unless `transport` is the one serving its platform here."""
        if not self.attached(transport):
            raise NotAttached(
                f"the {transport.name} transport is not attached to this router (another one "
                f"replaced it, or it was built for another router): build it with the router "
                f"it serves, e.g. {type(transport).__name__}(app.router, settings)"
            )

    async def send(self, target: Actor, reply: Reply) -> Posted:
        """Post an unsolicited reply (a round closing, a chapter finished) to `target`'s chat
        through its platform's transport, and run the `posted` hooks."""
        transport = self._transports.get(target.platform)
        if transport is None:
            log.warning("no %s transport to send to; reply dropped", target.platform)
            return Posted()
        reply = await self._buttons_in_language(target, reply)
        return await self._delivered(target, reply, await transport.send(target, reply))

    async def edit(
        self, target: Actor, message_id: str, reply: Reply, *, poll_message_id: str = ""
    ) -> None:
        """Replace a message posted in `target`'s chat (a ballot's running count); nothing
        when no transport of its platform is attached."""
        transport = self._transports.get(target.platform)
        if transport is not None:
            reply = await self._buttons_in_language(target, reply)
            await transport.edit(target, message_id, reply, poll_message_id=poll_message_id)

    async def _buttons_in_language(self, where: Actor, reply: Reply) -> Reply:
        """`reply` with its buttons marked with its language when that is not the chat's (an
        English answer in a Chinese group): their press is answered in the reply's language,
        not switched back to the chat's halfway through reading (`_press`)."""
        if not (reply.buttons or reply.poll) or reply.is_error:
            return reply
        if (await self.in_chat_language(where)).lang == reply.lang:
            return reply
        return _marked(reply)

    async def _delivered(self, where: Actor, reply: Reply, posted: Posted) -> Posted:
        for hook in self.registry.posted_hooks:
            try:
                await hook(where, reply, posted)
            except Exception:  # what was posted stays posted; only what the hook keeps is lost
                log.exception("a posted hook failed (%s chat %s)", where.platform, where.chat_id)
        return posted

    # ---- the steps ------------------------------------------------------------------------

    async def _run(self, attempt: Attempt) -> Reply:
        """The checks in order (the first refusal wins), then `ack`, then read, parse, run."""
        with self.activity.command():
            for check in self._checks:
                outcome = await check(attempt)
                if isinstance(outcome, Reply):
                    return outcome
                attempt = outcome
            if attempt.ack is not None:
                await attempt.ack()
            actor = attempt.actor
            if self._budgeted and actor.role != "operator":
                with paying(Payer(f"{actor.platform}:{actor.user_id}", actor.chat)):
                    reply = await self._execute(attempt)
            else:
                reply = await self._execute(attempt)
            if not reply.is_error and self.permissions.is_change(attempt.subject):
                await self._log_change(attempt, reply)
            return reply

    async def _log_change(self, inv: Attempt, reply: Reply) -> None:
        """One change-log entry: who, where, the command as given, what came of it. A log
        that fails loses the entry, never the change (logged as an error)."""
        if self._changes is None:
            return
        actor = inv.actor
        words = [f"/{' '.join(inv.path)}", *(str(v) for v in inv.values.values())]
        if inv.upload is not None:
            words.append(inv.upload.filename)
        change = Change(
            self._changes.stamp(),
            actor.platform,
            actor.user_id,
            actor.user_name,
            actor.chat,
            actor.channel_id,
            " ".join(words),
            next(iter(reply.plain().splitlines()), ""),
        )
        try:
            await self._changes.record(change)
        except Exception:
            log.exception("the change log could not record %s", change.what)

    async def _validate(self, inv: Attempt) -> Attempt | Reply:
        """Each parameter on its own; an upload counts only for a command that takes a file."""
        upload = inv.upload if inv.command.file_param is not None else None
        try:
            values = validate(inv.command, inv.raw, has_file=upload is not None)
        except UsageError as err:
            return self._usage(inv.lang, inv.command, err)
        return dataclasses.replace(inv, upload=upload, values=values)

    async def _check_upload(self, inv: Attempt) -> Attempt | Reply:
        """The upload's name and declared size (its bytes are read only after `ack`)."""
        if inv.file is None:
            return inv
        param, upload = inv.file
        if not param.accepts(upload.filename):
            bad = UsageError("bad_file_type", formats=param.formats())
            return self._usage(inv.lang, inv.command, bad)
        too_large = self._too_large(inv.lang, upload.size, param)
        return inv if too_large is None else too_large

    async def _check_permission(self, inv: Attempt) -> Attempt | Reply:
        """The permission table's verdict on this invocation (`bot.permissions`)."""
        permissions = self.permissions
        subject = await permissions.subject(inv.path, Values(inv.values), inv.actor)
        checked = await self._permitted(inv.actor, subject, inv.member)
        if isinstance(checked, Reply):
            return checked
        return dataclasses.replace(inv, actor=checked, subject=subject)

    async def _permitted(
        self, actor: Actor, subject: str, member: MemberLookup | None
    ) -> Actor | Reply:
        """The actor with its role decided, or the refusal. The platform is asked who the
        member is only when the verdict (or the handler) depends on it; when it cannot say,
        the reply says so and never guesses "not an admin"."""
        permissions, lang = self.permissions, actor.lang
        role = permissions.roles.known(actor)
        closed = permissions.access.refusal(actor, role)
        if closed is not None:
            refused(actor, subject, closed)
            return Reply.error(P(lang, closed), lang=lang)
        if role is None and permissions.needs_lookup(subject, actor.kind):
            try:
                role = await permissions.roles.of(actor, member)
            except AdminUnknown as err:
                log.warning(
                    "admin check failed (%s chat %s): %s", actor.platform, actor.chat_id, err
                )
                if not permissions.allows(subject, "member", actor.kind):
                    return Reply.error(T(lang, "admin_unknown"), lang=lang)
                role = "member"  # only curious: the handler decides what a member may do
        if role is None:  # a chat admin and a member get the same verdict here
            role = "chat_admin" if actor.is_admin else "member"
        actor = dataclasses.replace(actor, role=role, is_admin=role != "member")
        if not permissions.allows(subject, role, actor.kind):
            key = permissions.refusal(subject)
            refused(actor, subject, key)
            return Reply.error(P(lang, key), lang=lang)
        return actor

    async def _check_rate(self, inv: Attempt) -> Attempt | Reply:
        """The console is the operator's own terminal: limits protect shared chats only."""
        actor = inv.actor
        if not inv.command.rate_limited or actor.platform == "console":
            return inv
        wait = self._limiter.check(actor.platform, actor.chat_id, actor.user_id)
        if wait > 0:
            refused(actor, inv.command.name, "rate_limited")
            return Reply.error(
                T(inv.lang, "rate_limited", seconds=max(1, round(wait))), lang=inv.lang
            )
        return inv

    async def _execute(self, inv: Attempt) -> Reply:
        """Read the upload, parse into a typed request, run; every failure becomes a Reply."""
        lang, command = inv.lang, inv.command
        try:
            data: dict[str, str | int | File] = dict(inv.values)
            if inv.file is not None:
                param, upload = inv.file
                content = await upload.read()
                too_large = self._too_large(lang, len(content), param)
                if too_large is not None:  # the declared size may have understated it
                    return too_large
                data[param.name] = File(upload.filename, content)
            request = command.parse(Values(data))
            return await command.run(Call(inv.actor, inv.progress), request)
        except UsageError as err:
            return self._usage(lang, command, err)
        except UploadFailed as err:
            name = inv.upload.filename if inv.upload else ""
            log.warning("upload %s could not be read: %s", name, err)
            return Reply.error(T(lang, "file_failed"), lang=lang)
        except Exception:
            return self._internal_error(lang, command.name)

    # ---- language and errors --------------------------------------------------------------

    async def in_chat_language(self, actor: Actor) -> Actor:
        """The actor as the chat's language setting says (transports use it for their own
        notices, e.g. Discord's "this command was updated")."""
        if self._chats is None:
            return actor
        return self._with_lang(actor, await self._chats.language(actor.platform, actor.chat_id))

    @staticmethod
    def _lang(actor: Actor, words: str) -> Lang:
        """The language of the user's own words (arguments, not command names)."""
        return detect_language(words, default=actor.lang)

    @staticmethod
    def _with_lang(actor: Actor, lang: Lang) -> Actor:
        return actor if actor.lang == lang else dataclasses.replace(actor, lang=lang)

    def _sub_error(self, lang: Lang, group: Group, sub: str) -> Reply:
        choices = " | ".join(c.name for c in group.children)
        key = "need_sub" if not sub else "unknown_sub"
        text = T(lang, key, name=group.name, sub=sub[:40], choices=choices)
        return Reply.error(
            f"{text}\n{T(lang, 'usage', usage=group.help.usage_in(lang))}", lang=lang
        )

    def _usage(self, lang: Lang, command: Command[Any], err: UsageError) -> Reply:
        if err.text is not None:
            text = err.text[1] if lang == "en" else err.text[0]
        else:
            fields = {
                k: (v.label(lang) if isinstance(v, Param) else v) for k, v in err.fields.items()
            }
            text = T(lang, err.key, **fields)
        return Reply.error(
            f"{text}\n{T(lang, 'usage', usage=command.help.usage_in(lang))}", lang=lang
        )

    @staticmethod
    def _too_large(lang: Lang, size: int, param: Param) -> Reply | None:
        """The refusal for an upload over the parameter's limit; None when it fits."""
        if size <= param.max_bytes:
            return None
        text = T(lang, "file_too_large", size=size // 1024, limit=param.max_bytes // 1024)
        return Reply.error(text, lang=lang)

    @staticmethod
    def _internal_error(lang: Lang, what: str) -> Reply:
        ref = uuid.uuid4().hex[:8]
        log.exception("%s failed (ref %s)", what, ref)
        return Reply.error(T(lang, "internal_error", ref=ref), lang=lang)


# What separates a button's language from its action (`en|cite:2:…`): no action prefix holds it.
LANG_MARK = "|"


def _marked(reply: Reply) -> Reply:
    """`reply` with each button's and ballot option's action carrying the reply's language."""

    def mark(button: Button) -> Button:
        return dataclasses.replace(button, action=f"{reply.lang}{LANG_MARK}{button.action}")

    poll = reply.poll
    if poll is not None:
        poll = dataclasses.replace(poll, options=tuple(mark(o) for o in poll.options))
    return dataclasses.replace(reply, buttons=tuple(mark(b) for b in reply.buttons), poll=poll)


def _unmarked(action: str) -> tuple[Lang | None, str]:
    """(the language a pressed action was marked with, or None; the action itself)."""
    lang, mark, rest = action.partition(LANG_MARK)
    if mark and lang in _LANGS:
        return _LANGS[lang], rest
    return None, action


_LANGS: Mapping[str, Lang] = {"zh": "zh", "en": "en"}
