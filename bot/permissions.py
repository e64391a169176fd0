"""Who may do what: four roles, four kinds of chat, and the one permission table.

Roles (`bot.actor.Role`), decided from what the transports report (`Roles.of`):

- **operator**: a user named in `OPERATORS` (`discord:<user id>`, `telegram:<user id>`), and
  whoever types at the console or runs the CLI (the operator's own terminal);
- **chat admin**: an admin of a server or group by the platform's own rules (`bot.admin`);
- **member**: anyone else in a server or group;
- **stranger**: someone who is no operator, in a private chat with the bot. A DM is its own
  member's chat, so a stranger may change that chat's own things (its settings, its story,
  its personal shelf when `DM_UPLOADS=true`), and nothing that other chats read.

Chat kinds (`bot.actor.ChatKind`): a server or group, a forum topic in one, a DM, the console.

`TABLE` maps every command (split where what it may change differs: `/ingest delete` of a
book on this chat's shelf or in the shared library; `/settings language` asked or changed) ×
role × chat kind to allowed or refused; two cells depend on a setting (`DM_UPLOADS`,
`NOVEL_ROUND_OPENERS`). The router asks `Permissions` and nothing else decides: a command
module declares no permission. `docs/SECURITY.md` shows the table as `markdown()` writes it
(`python -m bot.permissions > docs/SECURITY.md` rewrites the file's table; a test fails when
they differ).

Before the table: `Access` (`ALLOWED_CHATS`, `ALLOW_DMS`) says whether the bot serves the chat
at all. Operators and the console are always served.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

from bot.actor import Actor, ChatKind, Role
from bot.admin import AdminPolicy, MemberFacts, MemberLookup
from bot.registry import Values

log = logging.getLogger(__name__)

ROLES: tuple[Role, ...] = get_args(Role)
KINDS: tuple[ChatKind, ...] = get_args(ChatKind)
# The roles a chat of each kind can hold: no stranger in a group, no one but the operator at
# the console. The other cells of the table are refused and shown as "—".
REALIZABLE: Mapping[ChatKind, tuple[Role, ...]] = {
    "group": ("operator", "chat_admin", "member"),
    "topic": ("operator", "chat_admin", "member"),
    "dm": ("operator", "stranger"),
    "console": ("operator",),
}

# A cell allowed only while a setting says so.
Condition = Literal["DM_UPLOADS", "NOVEL_ROUND_OPENERS=members"]
Cell = bool | Condition
# Which library an /ingest invocation would change (`Scopes`).
Scope = Literal["shelf", "shared"]

_EVERYONE = frozenset[Role]({"operator", "chat_admin", "member"})
_ADMINS = frozenset[Role]({"operator", "chat_admin"})
_OPERATORS = frozenset[Role]({"operator"})
_DM = frozenset[Role]({"operator", "stranger"})


@dataclass(frozen=True, slots=True)
class Rule:
    """One row: the roles allowed in a server or group (and its forum topics), in a DM, and
    whether the console may; `when`: cells allowed only under a setting; `change`: logged
    when it succeeds. `aware`: the
    command's handler wants to know whether a chat admin asks even where members may too
    (`Actor.is_admin`), so the router looks the asker up. `refusal`: the catalogue key of what
    a refused asker is told (`bot/catalogs/permissions.toml`)."""

    group: frozenset[Role]
    dm: frozenset[Role]
    console: bool = True
    when: Mapping[tuple[Role, ChatKind], Condition] = field(default_factory=dict)
    aware: bool = False
    refusal: str = "admins_only"
    # A change to what a chat or the library holds: the router logs each one that succeeds
    # (`bot.changes`).
    change: bool = False

    def cell(self, role: Role, kind: ChatKind) -> Cell:
        if role not in REALIZABLE[kind]:
            return False
        condition = self.when.get((role, kind))
        if condition is not None:
            return condition
        if kind == "console":
            return self.console
        return role in (self.dm if kind == "dm" else self.group)


def _anyone() -> Rule:
    return Rule(_EVERYONE, _DM)


def _admins(*, change: bool = False) -> Rule:
    return Rule(_ADMINS, _DM, change=change)


def _shelf() -> Rule:
    """Changes to a chat's own shelf: its admins; in a DM, its member when DM_UPLOADS."""
    return Rule(_ADMINS, _OPERATORS, when={("stranger", "dm"): "DM_UPLOADS"}, change=True)


def _shared() -> Rule:
    """Changes to the shared library every chat reads: operators only, from anywhere."""
    return Rule(_OPERATORS, _OPERATORS, refusal="shared_library", change=True)


# Subjects: a command's path, then " · " and what the invocation asks when that matters.
TABLE: Mapping[str, Rule] = {
    "/start": _anyone(),
    "/help": _anyone(),
    "/ask": _anyone(),
    "/cite": _anyone(),
    "/graph": _anyone(),
    "/sources · list": _anyone(),
    "/sources · log": _admins(),
    "/ingest add · shelf": _shelf(),
    "/ingest add · shared": _shared(),
    "/ingest delete · shelf": _shelf(),
    "/ingest delete · shared": _shared(),
    "/ingest restore · shelf": _shelf(),
    "/ingest restore · shared": _shared(),
    "/ingest trash": _admins(),
    "/settings show": _anyone(),
    "/settings language · view": _anyone(),
    "/settings language · change": _admins(change=True),
    "/settings script · view": _anyone(),
    "/settings script · change": _admins(change=True),
    "/settings ballot · view": _anyone(),
    "/settings ballot · change": _admins(change=True),
    "/chapter next": Rule(
        _ADMINS,
        _DM,
        when={
            ("member", "group"): "NOVEL_ROUND_OPENERS=members",
            ("member", "topic"): "NOVEL_ROUND_OPENERS=members",
        },
        aware=True,  # admins also hear which setting would let the bot write
        refusal="open_round",
    ),
    "/chapter propose": _anyone(),
    "/chapter vote": _anyone(),
    "/chapter submit": Rule(_EVERYONE, _DM, aware=True, change=True),  # the author, or an admin
    "/chapter show": _anyone(),
    "/chapter history": _anyone(),
    "/chapter revise": _admins(change=True),
    "/chapter rollback": _admins(change=True),
    "/chapter delete": _admins(change=True),
    "/chapter close": _admins(),
    "/chapter status": _anyone(),
    "/novel blueprint · show": _anyone(),
    "/novel blueprint · history": _anyone(),
    "/novel blueprint · set": _admins(change=True),
    "/novel blueprint · edit": _admins(change=True),
    "/novel blueprint · accept": _admins(change=True),
    "/novel blueprint · reject": _admins(change=True),
    "/novel export": _anyone(),
    "/novel characters": _anyone(),
    "/novel recap": _anyone(),
    "/novel map": _anyone(),
    "/novel new": _admins(change=True),
    "/novel list": _anyone(),
    "vote button": _anyone(),
    "poll answer": _anyone(),
    "cite page": _anyone(),
}

# Buttons and keys by their action prefix (`bot.registry.Action`); a native poll's answers.
ACTIONS: Mapping[str, str] = {"vote": "vote button", "cite": "cite page"}
POLL_ANSWER = "poll answer"


def _value_given(values: Values) -> str:
    return "change" if values.text("value") else "view"


def _ballot_change(values: Values) -> str:
    return "change" if values.has("setting") or values.has("setting2") else "view"


def _sources_view(values: Values) -> str:
    return "log" if values.text("view") == "log" else "list"


def _blueprint_action(values: Values) -> str:
    action = values.text("action")
    return action if action in ("show", "history", "set", "accept", "reject") else "edit"


# What an invocation asks, read from its values, where the table splits a command.
_ASKS: Mapping[tuple[str, ...], Callable[[Values], str]] = {
    ("sources",): _sources_view,
    ("settings", "language"): _value_given,
    ("settings", "script"): _value_given,
    ("settings", "ballot"): _ballot_change,
    ("novel", "blueprint"): _blueprint_action,
}

# Which library an /ingest invocation would change, asked of the library (the corpus room
# gives these at composition, `bot.commands.corpus.ingest_scopes`).
ScopeOf = Callable[[Actor, Values], Awaitable[Scope]]
Scopes = Mapping[tuple[str, ...], ScopeOf]


@dataclass(frozen=True, slots=True)
class Conditions:
    """The settings the conditional cells read."""

    dm_uploads: bool = False
    members_open_rounds: bool = False

    def holds(self, condition: Condition) -> bool:
        if condition == "DM_UPLOADS":
            return self.dm_uploads
        return self.members_open_rounds


def allowed(
    subject: str,
    role: Role,
    kind: ChatKind,
    conditions: Conditions,
    table: Mapping[str, Rule] = TABLE,
) -> bool:
    """The table's verdict (an unknown subject is refused)."""
    rule = table.get(subject)
    if rule is None:
        return False
    cell = rule.cell(role, kind)
    return cell if isinstance(cell, bool) else conditions.holds(cell)


@dataclass(frozen=True, slots=True)
class Roles:
    """Facts → a role. `operators`: `platform:user_id` keys (OPERATORS)."""

    operators: frozenset[str] = frozenset()
    policy: AdminPolicy = field(default_factory=AdminPolicy)

    def known(self, actor: Actor) -> Role | None:
        """The role when no lookup is needed: operators, the console, a DM's stranger; None
        in a server or group (chat admin or member: `of` asks the platform)."""
        if actor.platform == "console" or actor.kind == "console":
            return "operator"
        if f"{actor.platform}:{actor.user_id}" in self.operators:
            return "operator"
        if actor.kind == "dm":
            return "stranger"
        return None

    async def of(self, actor: Actor, lookup: MemberLookup | None) -> Role:
        """The asker's role; raises `bot.admin.AdminUnknown` when the platform cannot say.
        Without a lookup, the transport already knew (`Actor.is_admin`)."""
        role = self.known(actor)
        if role is not None:
            return role
        member: MemberFacts | None = await lookup() if lookup is not None else None
        admin = actor.is_admin if member is None else self.policy.is_admin(member)
        return "chat_admin" if admin else "member"


@dataclass(frozen=True, slots=True)
class Access:
    """Which chats the bot serves at all: `allowed_chats` (`platform:chat_id`; empty = every
    chat) and DMs (`allow_dms`). Operators and the console are always served."""

    allowed_chats: frozenset[str] = frozenset()
    allow_dms: bool = True

    def refusal(self, actor: Actor, role: Role | None) -> str | None:
        """The catalogue key of why the chat is not served; None when it is."""
        if role == "operator":
            return None
        if actor.kind == "dm":
            return None if self.allow_dms else "dms_closed"
        if self.allowed_chats and actor.chat not in self.allowed_chats:
            return "chat_not_allowed"
        return None


@dataclass(frozen=True, slots=True)
class Permissions:
    """What the router asks: the subject an invocation is, and the verdicts on it. `table`
    is `TABLE` in the product (a test's own commands bring rows of their own)."""

    roles: Roles = field(default_factory=Roles)
    access: Access = field(default_factory=Access)
    conditions: Conditions = field(default_factory=Conditions)
    scopes: Scopes = field(default_factory=dict)
    table: Mapping[str, Rule] = field(default_factory=lambda: TABLE)

    async def subject(self, path: tuple[str, ...], values: Values, actor: Actor) -> str:
        """The table row an invocation falls under."""
        name = "/" + " ".join(path)
        scope = self.scopes.get(path)
        if scope is not None:
            return f"{name} · {await scope(actor, values)}"
        asks = _ASKS.get(path)
        if asks is not None:
            return f"{name} · {asks(values)}"
        if name in self.table:
            return name
        # A command whose scope no library resolves (a registry without a corpus): the
        # stricter of its rows.
        return f"{name} · shared" if f"{name} · shared" in self.table else name

    def allows(self, subject: str, role: Role, kind: ChatKind) -> bool:
        return allowed(subject, role, kind, self.conditions, self.table)

    def needs_lookup(self, subject: str, kind: ChatKind) -> bool:
        """Whether a chat admin and a member may differ here (or the handler wants to know):
        only then is the platform asked who the member is."""
        rule = self.table.get(subject)
        if rule is None or kind not in ("group", "topic"):
            return False
        if rule.aware:
            return True
        return self.allows(subject, "chat_admin", kind) != self.allows(subject, "member", kind)

    def refusal(self, subject: str) -> str:
        rule = self.table.get(subject)
        return rule.refusal if rule is not None else "admins_only"

    def is_change(self, subject: str) -> bool:
        rule = self.table.get(subject)
        return rule is not None and rule.change


def refused(actor: Actor, what: str, reason: str) -> None:
    """One log line for a refusal (never a traceback): who, where, what, why."""
    log.info(
        "refused %s: %s (%s %s user %s, %s)",
        what,
        reason,
        actor.platform,
        actor.chat_id,
        actor.user_id,
        actor.role or actor.kind,
    )


# ---- the table as docs/SECURITY.md shows it ---------------------------------------------------

_ROLE_NAMES: Mapping[Role, str] = {
    "operator": "operator",
    "chat_admin": "chat admin",
    "member": "member",
    "stranger": "stranger",
}
_KIND_NAMES: Mapping[ChatKind, str] = {
    "group": "server/group",
    "topic": "forum topic",
    "dm": "DM",
    "console": "console",
}
BEGIN = "<!-- permission table: generated by `python -m bot.permissions`; do not edit -->"
END = "<!-- end of permission table -->"


def _columns() -> Iterator[tuple[Role, ChatKind]]:
    for kind in KINDS:
        for role in ROLES:
            yield role, kind


def _shown(cell: Cell, role: Role, kind: ChatKind) -> str:
    if role not in REALIZABLE[kind]:
        return "—"
    if isinstance(cell, bool):
        return "✓" if cell else "✗"
    return f"✓ if {cell}"


def markdown() -> str:
    """The table between its markers: one row a subject, one column a (chat kind, role)."""
    columns = list(_columns())
    head = "| command | " + " | ".join(f"{_KIND_NAMES[k]}: {_ROLE_NAMES[r]}" for r, k in columns)
    lines = [BEGIN, "", head + " |", "|---" * (len(columns) + 1) + "|"]
    for subject, rule in TABLE.items():
        cells = " | ".join(_shown(rule.cell(r, k), r, k) for r, k in columns)
        lines.append(f"| `{subject}` | {cells} |")
    lines += ["", END]
    return "\n".join(lines)


def with_table(document: str) -> str:
    """`document` with the text between the markers replaced by `markdown()`."""
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        raise ValueError("the document has no permission-table markers")
    return document[:start] + markdown() + document[end + len(END) :]


if __name__ == "__main__":  # rewrite the table in the file given (default docs/SECURITY.md)
    from pathlib import Path

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/SECURITY.md")
    target.write_text(with_table(target.read_text(encoding="utf-8")), encoding="utf-8")
