"""The permission table (`bot.permissions`) is the one place that decides who may do what:

- `docs/SECURITY.md` shows the table exactly as the code writes it;
- every command and button the product registers has a row, and every row is a command;
- through the real router and the real command registry, over every (command, role, chat
  kind) and both settings the table reads, a command runs exactly when the table allows it
  (Hypothesis; the roles come from the facts a transport reports, never from a flag);
- the writers' room's own rule (`novel.api.needs_admin`) agrees with the table
  (tests/unit/test_novel_admin_rule.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bot.actor import Actor, ChatKind, Role
from bot.admin import AdminPolicy, MemberFacts
from bot.budget import Payer, Spent
from bot.changes import Change
from bot.commands import standard_registry
from bot.commands.corpus import ingest_scopes
from bot.i18n import T, catalog
from bot.permissions import (
    ACTIONS,
    KINDS,
    POLL_ANSWER,
    REALIZABLE,
    ROLES,
    TABLE,
    Access,
    Conditions,
    Permissions,
    Roles,
    allowed,
    markdown,
)
from bot.ratelimit import RateLimiter
from bot.registry import PollAnswer, Upload
from bot.reply import Reply
from bot.router import Invocation, Press, Router, Slash
from bot.shelves import Shelves
from ingest.pipeline import IngestSummary
from ingest.uploads import UploadResult
from retrieval.graph.view import NotInGraph
from retrieval.index import DocumentRecord, IndexReport
from retrieval.library import SHARED, SHARED_ONLY, Reading
from tests.service_fakes import RecordingBallots, RecordingNovels, RecordingScholar

ROOT = Path(__file__).resolve().parents[2]
P = catalog("permissions")
REFUSALS = {P(lang, key) for key in P.keys() for lang in ("zh", "en")} | {
    T("zh", "admin_unknown"),
    T("en", "admin_unknown"),
}
OPERATOR_ID = "900"


def test_security_md_shows_the_table_the_code_holds() -> None:
    document = (ROOT / "docs" / "SECURITY.md").read_text(encoding="utf-8")
    assert markdown() in document, "run `python -m bot.permissions` to rewrite the table"


def test_a_cell_no_chat_of_its_kind_can_hold_is_refused() -> None:
    for subject in TABLE:
        for kind in KINDS:
            for role in ROLES:
                if role not in REALIZABLE[kind]:
                    for dm_uploads in (False, True):
                        conditions = Conditions(dm_uploads, members_open_rounds=True)
                        assert not allowed(subject, role, kind, conditions), (subject, role, kind)


# ---- the registry the product builds, over recording services ------------------------------


@dataclass
class Recorder:
    """Every service a command reaches, recording that it ran."""

    runs: list[str] = field(default_factory=list)


class FakeCorpus:
    """`shared-book` is in the shared library, `shelf-book` on the asker's shelf (both live
    and in the trash)."""

    def __init__(self, runs: Recorder) -> None:
        self._runs = runs

    def _record(self, key: str, namespaces: Sequence[str]) -> DocumentRecord | None:
        if key == "shared-book":
            return DocumentRecord("d1", key, "h", namespace=SHARED)
        if key == "shelf-book" and namespaces and namespaces[0] != SHARED:
            return DocumentRecord("d2", key, "h", namespace=namespaces[0])
        return None

    async def add(self, *args: Any, namespace: str = SHARED) -> UploadResult:
        self._runs.runs.append(f"add {namespace}")
        summary = IngestSummary()
        summary.add(Path("a.md"), "d3", IndexReport("added", 1))
        return UploadResult(summary, DocumentRecord("d3", "a", "h", namespace=namespace))

    async def find(
        self, key: str, namespaces: Sequence[str], *, trashed: bool = False
    ) -> DocumentRecord | None:
        return self._record(key, namespaces)

    async def delete(self, record: DocumentRecord, *, by: str = "") -> DocumentRecord | None:
        self._runs.runs.append("delete")
        return record

    async def restore(self, record: DocumentRecord) -> DocumentRecord | None:
        self._runs.runs.append("restore")
        return record

    async def documents(self, namespaces: Sequence[str] | None = None) -> list[DocumentRecord]:
        self._runs.runs.append("documents")
        return []

    async def trash(self, namespaces: Sequence[str] | None = None) -> list[DocumentRecord]:
        self._runs.runs.append("trash")
        return []


class FakeChats:
    def __init__(self, runs: Recorder) -> None:
        self._runs = runs

    async def language(self, platform: str, chat_id: str) -> Any:
        return "zh"

    async def set_language(self, platform: str, chat_id: str, lang: Any, set_by: str) -> None:
        self._runs.runs.append("set_language")

    async def script(self, platform: str, chat_id: str) -> Any:
        return None

    async def set_script(self, platform: str, chat_id: str, script: Any, set_by: str) -> None:
        self._runs.runs.append("set_script")


class FakeGraph:
    def __init__(self, runs: Recorder) -> None:
        self._runs = runs

    async def show(self, text: str, lang: Any, *, reading: Reading = SHARED_ONLY) -> Any:
        self._runs.runs.append("graph")
        return NotInGraph(text, ())


class FakeStory:
    def __init__(self, runs: Recorder) -> None:
        self._runs = runs

    async def cast(self, chat_id: str) -> Any:
        from novel.cast import CastView

        self._runs.runs.append("cast")
        return CastView("t", 0, ())

    async def recap(self, chat_id: str, count: int) -> Any:
        from novel.cast import Recap

        self._runs.runs.append("recap")
        return Recap("t", 3, 0, ())

    async def cast_map(self, chat_id: str) -> Any:
        from novel.cast import CastMap

        self._runs.runs.append("map")
        return CastMap("t", 0, (), ())


class OneStoryAChat:
    """Every chat holds its own story, and no place one of its own."""

    def story_at(self, place: Any) -> str:
        return str(place.chat_id)

    def chat_of(self, story_id: str) -> str:
        return story_id


class FakeChanges:
    async def entries(self, chat: str | None = None, *, limit: int = 30) -> list[Change]:
        return []

    async def count(self, chat: str, what: str, since: str) -> int:
        return 0

    def stamp(self) -> str:
        return "2026-01-01T00:00:00+00:00"


class FakeUsage:
    def spent(self, payer: Payer) -> Spent:
        return Spent(0, 0, 0, 0)


class AllShelves:
    """Every chat's shelf holds something."""

    def reading(self, shelf: str = "") -> Reading:
        return Reading((SHARED, shelf) if shelf else (SHARED,), frozenset(), shelf)


def router_for(
    conditions: Conditions,
) -> tuple[Router, Recorder, RecordingScholar, RecordingNovels]:
    runs = Recorder()
    scholar, novels = RecordingScholar(), RecordingNovels()
    shelves = Shelves(AllShelves(), conditions.dm_uploads)
    corpus = FakeCorpus(runs)
    registry = standard_registry(
        scholar,
        novels,
        RecordingBallots(),
        chats=FakeChats(runs),
        corpus=corpus,
        graph=FakeGraph(runs),
        story=FakeStory(runs),  # type: ignore[arg-type]
        places=OneStoryAChat(),
        shelves=shelves,
        changes=FakeChanges(),
        usage=FakeUsage(),
    )
    permissions = Permissions(
        Roles(frozenset({f"telegram:{OPERATOR_ID}"}), AdminPolicy()),
        Access(),
        conditions,
        ingest_scopes(corpus, shelves),
    )
    router = Router(registry, limiter=RateLimiter(0, 0), permissions=permissions)
    return router, runs, scholar, novels


BLUEPRINT = b'{"title": "t"}'
# One invocation a subject: (path, arguments, an upload); buttons as a press.
INVOCATIONS: dict[str, tuple[tuple[str, ...], dict[str, str | int], bytes | None]] = {
    "/start": (("start",), {}, None),
    "/help": (("help",), {}, None),
    "/ask": (("ask",), {"question": "经纶"}, None),
    "/cite": (("cite",), {"reference": "弗1:10"}, None),
    "/graph": (("graph",), {"concept": "经纶"}, None),
    "/sources · list": (("sources",), {}, None),
    "/sources · log": (("sources",), {"view": "log"}, None),
    "/ingest add · shelf": (("ingest", "add"), {}, b"# t\n\ntext"),
    "/ingest add · shared": (("ingest", "add"), {"library": "shared"}, b"# t\n\ntext"),
    "/ingest delete · shelf": (("ingest", "delete"), {"source": "shelf-book"}, None),
    "/ingest delete · shared": (("ingest", "delete"), {"source": "shared-book"}, None),
    "/ingest restore · shelf": (("ingest", "restore"), {"source": "shelf-book"}, None),
    "/ingest restore · shared": (("ingest", "restore"), {"source": "shared-book"}, None),
    "/ingest trash": (("ingest", "trash"), {}, None),
    "/settings show": (("settings", "show"), {}, None),
    "/settings language · view": (("settings", "language"), {}, None),
    "/settings language · change": (("settings", "language"), {"value": "en"}, None),
    "/settings script · view": (("settings", "script"), {}, None),
    "/settings script · change": (("settings", "script"), {"value": "繁体"}, None),
    "/settings ballot · view": (("settings", "ballot"), {}, None),
    "/settings ballot · change": (("settings", "ballot"), {"setting": "poll"}, None),
    "/chapter next": (("chapter", "next"), {}, None),
    "/chapter propose": (("chapter", "propose"), {"title": "夜渡"}, None),
    "/chapter vote": (("chapter", "vote"), {"option": 1}, None),
    "/chapter submit": (("chapter", "submit"), {"text": "正文"}, None),
    "/chapter show": (("chapter", "show"), {}, None),
    "/chapter history": (("chapter", "history"), {"chapter": 1}, None),
    "/chapter revise": (("chapter", "revise"), {"chapter": 1}, None),
    "/chapter rollback": (("chapter", "rollback"), {"chapter": 1, "version": 1}, None),
    "/chapter delete": (("chapter", "delete"), {}, None),
    "/chapter close": (("chapter", "close"), {}, None),
    "/novel blueprint · show": (("novel", "blueprint"), {"action": "show"}, None),
    "/novel blueprint · history": (("novel", "blueprint"), {"action": "history"}, None),
    "/novel blueprint · set": (("novel", "blueprint"), {"action": "set"}, BLUEPRINT),
    "/novel blueprint · edit": (
        ("novel", "blueprint"),
        {"action": "edit", "field": "title", "value": "新"},
        None,
    ),
    "/novel blueprint · accept": (("novel", "blueprint"), {"action": "accept"}, None),
    "/novel blueprint · reject": (("novel", "blueprint"), {"action": "reject"}, None),
    "/novel export": (("novel", "export"), {}, None),
    "/novel characters": (("novel", "characters"), {}, None),
    "/novel recap": (("novel", "recap"), {}, None),
    "/novel map": (("novel", "map"), {}, None),
    "/chapter status": (("chapter", "status"), {}, None),
    "/novel new": (("novel", "new"), {"title": "星海"}, None),
    "/novel list": (("novel", "list"), {}, None),
}
# Buttons as a press, a native poll's answer as one.
PRESSES: dict[str, Press | PollAnswer] = {
    "vote button": Press("vote:r1:1"),
    "cite page": Press("cite:2:s:Ps.119.1-Ps.119.176"),
    POLL_ANSWER: PollAnswer("p1", (0,)),
}


def test_every_command_and_button_has_a_row_and_every_row_a_command() -> None:
    router, *_ = router_for(Conditions())
    paths = {path for path, _ in router.registry.commands()}
    assert paths == {path for path, _, _ in INVOCATIONS.values()}
    assert set(INVOCATIONS) | set(PRESSES) == set(TABLE)
    assert set(ACTIONS.values()) | {POLL_ANSWER} == set(PRESSES)
    assert router.registry.poll_answers is not None
    for prefix in ACTIONS:
        assert router.registry.action(prefix) is not None, prefix


def actor_for(
    role: Role, kind: ChatKind
) -> tuple[Actor, Callable[[], Awaitable[MemberFacts]] | None]:
    """The facts a transport would report for someone of `role` in a chat of `kind`."""
    user = OPERATOR_ID if role == "operator" else "7"
    if kind == "console":
        return Actor("console", "console", "cli", kind="console"), None
    chat = {"group": "-100", "topic": "-100", "dm": user}[kind]
    actor = Actor("telegram", chat, user, channel_id="5" if kind == "topic" else "", kind=kind)

    async def lookup() -> MemberFacts:
        if kind == "dm":
            return MemberFacts(private_chat=True)
        return MemberFacts(administrator=role == "chat_admin")

    return actor, lookup


REALIZED = [(role, kind) for kind in KINDS for role in REALIZABLE[kind]]
ROUTERS = {
    (dm, members): router_for(Conditions(dm, members))
    for dm in (False, True)
    for members in (False, True)
}


async def _outcome(
    router: Router, subject: str, actor: Actor, lookup: Callable[[], Awaitable[MemberFacts]] | None
) -> Reply:
    if subject in PRESSES:
        return await router.answer(Invocation(actor, PRESSES[subject], member=lookup))
    path, raw, data = INVOCATIONS[subject]
    upload = Upload.of(data, "a.md" if path[0] == "ingest" else "bp.json") if data else None
    return await router.answer(
        Invocation(actor, Slash(path, dict(raw)), upload=upload, member=lookup)
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    subject=st.sampled_from(sorted(TABLE)),
    who=st.sampled_from(REALIZED),
    dm_uploads=st.booleans(),
    members_open_rounds=st.booleans(),
)
def test_a_command_runs_exactly_when_the_table_allows_it(
    subject: str, who: tuple[Role, ChatKind], dm_uploads: bool, members_open_rounds: bool
) -> None:
    import asyncio

    role, kind = who
    router, *_ = ROUTERS[(dm_uploads, members_open_rounds)]
    actor, lookup = actor_for(role, kind)
    if subject not in PRESSES:
        path, raw, _ = INVOCATIONS[subject]
        from bot.registry import Values

        resolved = asyncio.run(router.permissions.subject(path, Values(raw), actor))
        # An /ingest invocation names its library by where the document is: a chat with no
        # shelf (the console, a DM without DM_UPLOADS) has no shelf subject to reach.
        assume(resolved == subject)
    reply = asyncio.run(_outcome(router, subject, actor, lookup))
    refused = reply.plain() in REFUSALS
    expected = allowed(subject, role, kind, Conditions(dm_uploads, members_open_rounds))
    assert refused is not expected, (subject, role, kind, reply.plain())
