"""The one registry of chat commands and button actions.

A `Command` is a small object holding everything about one command: its name and help (zh/en),
its parameters (which drive text parsing, validation, Discord's option schema and
autocomplete), whether it is rate-limited, how its validated arguments become a typed request
(`parse`) and what runs it (`run`). Who may run it is not here: the permission table
(`bot.permissions`) is the one place that says. `Group`s nest commands (`/chapter vote`).
An `Action` decodes the `prefix:payload` strings a feature puts on buttons and keyboards, and
runs them (discord.py's `DynamicItem`: the feature that builds the string parses it back).
A native poll's answer (`PollAnswer`) goes to the one handler registered for it, and every
delivery runs the `posted` hooks (what a feature must know about what went out, e.g. where a
ballot was posted).

`Handlers` keeps handlers by the type of request they take (python-telegram-bot's
`TypeHandler`): `Command[SubmitChapter]` runs `handlers.of(SubmitChapter)`.

Features contribute their commands from `bot/commands/<room>.py`; the composition root adds
them to one `Registry`; the router, `/help`, both platforms' command menus and Discord's slash
commands all read it. Nothing here knows about a platform.

    registry = Registry()
    registry.add(*scholar_commands(scholar), *novel_commands(novels))
    registry.add_action(*ballot_actions(ballots)).answer_polls(ballots.poll_answer)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from bot.actor import Actor
from bot.reply import Posted, Progress, Reply
from kernel.i18n import Lang

A = TypeVar("A")

MAX_FIELD = 2000
MAX_UPLOAD_BYTES = 2 * 1024 * 1024

ParamKind = Literal["text", "int", "choice", "file"]
# Autocomplete: what the user has typed so far, and who is typing where → (label shown, value
# inserted) suggestions (a chat sees its own shelf's titles, no other's).
Suggest = Callable[[str, Actor], Sequence[tuple[str, str]]]


class UsageError(Exception):
    """Bad arguments: answered with the message and the command's usage line.

    Either a catalogue key of `bot.i18n.T` with its fields, or a ready message in both
    languages (`UsageError.say`), e.g. the scripture parser's own explanation."""

    def __init__(self, key: str, **fields: object) -> None:
        super().__init__(key)
        self.key = key
        self.fields = fields
        self.text: tuple[str, str] | None = None

    @classmethod
    def say(cls, zh: str, en: str) -> UsageError:
        err = cls("")
        err.text = (zh, en)
        return err


class UploadFailed(Exception):
    """The platform could not hand over an uploaded file."""


@dataclass(frozen=True, slots=True)
class Upload:
    """A file that came with a command, not yet downloaded: commands that take no file never
    cost a download, and the size is checked before reading."""

    filename: str
    size: int  # as the platform reports it; 0 = unknown (checked again after reading)
    read: Callable[[], Awaitable[bytes]]  # raises UploadFailed

    @classmethod
    def of(cls, data: bytes, filename: str = "upload") -> Upload:
        async def read() -> bytes:
            return data

        return cls(filename, len(data), read)


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    zh: str
    en: str
    kind: ParamKind = "text"
    required: bool = True
    rest: bool = False  # text form: takes the remainder of the line
    max_len: int = MAX_FIELD
    choices: tuple[str, ...] = ()
    max_bytes: int = MAX_UPLOAD_BYTES  # file parameters
    extensions: tuple[str, ...] = ()  # file parameters: accepted suffixes (".pdf"); () = any
    # Accepted only so that the loader says why it cannot read them (".doc"): never named
    # among the formats a command takes.
    unlisted: tuple[str, ...] = ()
    suggest: Suggest | None = None  # autocomplete provider (Discord)

    def label(self, lang: Lang) -> str:
        return self.en if lang == "en" else self.zh

    def formats(self) -> str:
        """ "PDF / EPUB / TXT / MD" — the accepted file types, for messages."""
        listed = (e for e in self.extensions if e not in self.unlisted)
        return " / ".join(dict.fromkeys(e.lstrip(".").upper() for e in listed))

    def accepts(self, filename: str) -> bool:
        name = filename.lower()
        return not self.extensions or name.endswith(self.extensions)


@dataclass(frozen=True, slots=True)
class File:
    """An upload, read: its name as the user's client gave it, and its bytes."""

    name: str
    data: bytes


class Values:
    """A command's validated arguments by parameter name: what `Command.parse` reads."""

    def __init__(self, values: Mapping[str, str | int | File]) -> None:
        self._values = dict(values)

    def has(self, name: str) -> bool:
        return name in self._values

    def text(self, name: str, default: str = "") -> str:
        value = self._values.get(name)
        return value if isinstance(value, str) else default

    def number(self, name: str) -> int:
        value = self._values[name]  # a required parameter: validation guarantees it
        assert isinstance(value, int)
        return value

    def maybe_number(self, name: str) -> int | None:
        value = self._values.get(name)
        return value if isinstance(value, int) else None

    def file(self, name: str) -> bytes | None:
        value = self._values.get(name)
        return value.data if isinstance(value, File) else None

    def upload(self, name: str) -> File | None:
        value = self._values.get(name)
        return value if isinstance(value, File) else None


@dataclass(frozen=True, slots=True)
class Call:
    """What a handler gets besides its arguments: who asked, and where to stream progress."""

    actor: Actor
    progress: Progress | None = None


# What runs a command (or an action, or a poll's answer) once its request is typed.
Run = Callable[[Call, A], Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class PollAnswer:
    """A native poll's answer as the platform reports it: which poll, and the options chosen
    (0-based, as the platforms count them; none = the member withdrew). It names no chat: the
    feature that posted the poll knows where it went."""

    poll_id: str
    option_ids: tuple[int, ...] = ()


# Where a platform's native poll was posted, by the feature that posted it: (chat id, channel
# id: a forum topic, "" for none), or None when it posted no such poll. For a transport that no
# longer remembers (a poll posted before a restart): the poll's answers name no chat.
PollPlace = Callable[[str, str], Awaitable[tuple[str, str] | None]]


# Told about every reply a transport posted: where (the chat as an actor), what, and the ids
# it got (httpx's response hooks).
PostedHook = Callable[[Actor, Reply, Posted], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Help:
    name: str
    zh: str
    en: str
    usage: str
    usage_en: str = ""  # when the usage line has Chinese words or examples

    def describe(self, lang: Lang) -> str:
        return self.en if lang == "en" else self.zh

    def usage_in(self, lang: Lang) -> str:
        return self.usage_en if lang == "en" and self.usage_en else self.usage


@dataclass(frozen=True, slots=True, kw_only=True)
class Command(Generic[A]):
    """One runnable command. `parse` turns validated values into the handler's typed request
    (raising `UsageError` for combinations a single parameter cannot express); `run` answers."""

    help: Help
    params: tuple[Param, ...] = ()
    parse: Callable[[Values], A]
    run: Run[A]
    rate_limited: bool = True
    # Text form: split the remainder on "|" into the params, in order (e.g. a proposal).
    pipe_split: bool = False

    @property
    def name(self) -> str:
        return self.help.name

    @property
    def file_param(self) -> Param | None:
        return next((p for p in self.params if p.kind == "file"), None)


@dataclass(frozen=True, slots=True)
class Group:
    """A command with subcommands (`/chapter next`); children may be groups themselves."""

    help: Help
    children: tuple[Command[Any] | Group, ...]
    # Text form: the child that runs when the first word names no child (`/ingest 书名` is
    # `/ingest add 书名`). Slash commands always name the child.
    default: str = ""
    # Text form: the child that runs when no word follows (`/settings` is `/settings show`);
    # a word that names no child is still an unknown subcommand.
    bare: str = ""

    @property
    def name(self) -> str:
        return self.help.name

    def child(self, name: str) -> Command[Any] | Group | None:
        return next((c for c in self.children if c.name == name), None)

    def fallback(self) -> Command[Any] | Group | None:
        return self.child(self.default) if self.default else None


Entry = Command[Any] | Group


@dataclass(frozen=True, slots=True, kw_only=True)
class Action(Generic[A]):
    """A button / keyboard / poll choice coming back as `f"{prefix}:{payload}"`. The feature
    that emits the strings owns `decode` (None = stale or garbled → "this button has expired")."""

    prefix: str
    decode: Callable[[str], A | None]
    run: Run[A]


class Handlers:
    """Handlers by the type of request they take (python-telegram-bot's `TypeHandler`): a
    command runs `of(its request type)`; `run` finds the handler by a request's own type, for
    a command whose `parse` chooses the type (an action word) and for callers holding a
    request already (tests). A type registered twice, or never, is a wiring mistake."""

    def __init__(self) -> None:
        self._runs: dict[type, Run[Any]] = {}

    def add(self, kind: type[A], run: Run[A]) -> Handlers:
        if kind in self._runs:
            raise ValueError(f"{kind.__name__} has a handler already")
        self._runs[kind] = run
        return self

    def of(self, kind: type[A]) -> Run[A]:
        try:
            return self._runs[kind]
        except KeyError:
            raise LookupError(f"no handler for {kind.__name__}") from None

    async def run(self, call: Call, request: object) -> Reply:
        return await self.of(type(request))(call, request)


class Registry:
    """Commands and actions by name; iteration yields the top-level commands in order."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._actions: dict[str, Action[Any]] = {}
        self._poll_answers: Run[PollAnswer] | None = None
        self._poll_place: PollPlace | None = None
        self._posted: list[PostedHook] = []

    def add(self, *entries: Entry) -> Registry:
        for entry in entries:
            if entry.name in self._entries:
                raise ValueError(f"command /{entry.name} is registered twice")
            self._entries[entry.name] = entry
        return self

    def add_action(self, *actions: Action[Any]) -> Registry:
        for action in actions:
            if ":" in action.prefix or action.prefix in self._actions:
                raise ValueError(f"bad or duplicate action prefix {action.prefix!r}")
            self._actions[action.prefix] = action
        return self

    def answer_polls(self, run: Run[PollAnswer], *, place: PollPlace | None = None) -> Registry:
        """The one handler of native polls' answers, and where it says a poll was posted."""
        if self._poll_answers is not None:
            raise ValueError("poll answers have a handler already")
        self._poll_answers = run
        self._poll_place = place
        return self

    def on_posted(self, *hooks: PostedHook) -> Registry:
        self._posted.extend(hooks)
        return self

    @property
    def poll_answers(self) -> Run[PollAnswer] | None:
        return self._poll_answers

    @property
    def poll_place(self) -> PollPlace | None:
        return self._poll_place

    @property
    def posted_hooks(self) -> tuple[PostedHook, ...]:
        return tuple(self._posted)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries.values())

    def get(self, name: str) -> Entry | None:
        return self._entries.get(name)

    def commands(self) -> Iterator[tuple[tuple[str, ...], Command[Any]]]:
        """Every runnable command with its path, groups walked: (("chapter", "vote"), …)."""

        def walk(entry: Entry, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
            if isinstance(entry, Group):
                for child in entry.children:
                    yield from walk(child, (*path, child.name))
            else:
                yield path, entry

        for entry in self:
            yield from walk(entry, (entry.name,))

    def action(self, prefix: str) -> Action[Any] | None:
        return self._actions.get(prefix)
