"""The blueprint service: show, upload, edit, and the admin's decision on proposed changes.
Every write keeps the replaced blueprint in the history."""

from __future__ import annotations

import json

from kernel.refusal import Refused
from novel.blueprint import (
    Blueprint,
    default_blueprint,
    edit,
    parse_upload,
    render_summary,
    validate,
)
from novel.evolve import BlueprintChange
from novel.member import Member
from novel.repo import BlueprintStore, ChangeRow
from novel.results import (
    BlueprintEdited,
    BlueprintHistoryView,
    BlueprintSaved,
    BlueprintShown,
    ChangesDecided,
)
from novel.schedule import Now
from novel.settings import NovelSettings


class WorldService:
    def __init__(self, store: BlueprintStore, settings: NovelSettings, clock: Now) -> None:
        self._store = store
        self._settings = settings
        self._clock = clock

    async def blueprint(self, chat_id: str) -> Blueprint:
        raw = await self._store.blueprint_json(chat_id)
        return validate(json.loads(raw)) if raw else default_blueprint()

    async def show(self, member: Member) -> BlueprintShown:
        bp = await self.blueprint(member.chat_id)
        return BlueprintShown(
            bp.to_json(),
            render_summary(bp, member.lang),
            [c.as_change() for c in await self._store.pending_changes(member.chat_id)],
        )

    async def _ensure_novel(self, chat_id: str) -> None:
        """The chat's novel exists (with the default blueprint) before its blueprint is
        written over."""
        await self._store.ensure_novel(chat_id, default_blueprint().to_json(), self._clock())

    async def upload(self, member: Member, data: bytes, reason: str) -> BlueprintSaved:
        bp = parse_upload(data, self._settings.max_blueprint_bytes)
        await self._ensure_novel(member.chat_id)
        await self._store.set_blueprint(
            member.chat_id, bp.to_json(), member.user_id, self._clock(), reason
        )
        return BlueprintSaved(bp.title, len(bp.characters))

    async def edit(self, member: Member, field: str, value: str, reason: str) -> BlueprintEdited:
        bp = edit(await self.blueprint(member.chat_id), field, value)
        await self._ensure_novel(member.chat_id)
        await self._store.set_blueprint(
            member.chat_id, bp.to_json(), member.user_id, self._clock(), reason
        )
        return BlueprintEdited(field, value.strip())

    async def decide(self, member: Member, ids: tuple[int, ...], accept: bool) -> ChangesDecided:
        """Accept (apply in order, one transaction) or reject pending changes; no ids = all.
        A change that no longer applies (its character was removed …) is skipped, not fatal."""
        pending = await self._store.pending_changes(member.chat_id)
        if not pending:
            raise Refused("no_pending_changes")
        chosen: list[ChangeRow] = pending
        if ids:
            by_id = {c.id: c for c in pending}
            missing = [i for i in ids if i not in by_id]
            if missing:
                raise Refused(
                    "no_such_change",
                    id=missing[0],
                    ids="、".join(str(c.id) for c in pending),
                )
            chosen = [by_id[i] for i in ids]
        if not accept:
            await self._decide(member, [c.id for c in chosen], "rejected", None, "")
            return ChangesDecided(False, [c.as_change() for c in chosen])
        bp = await self.blueprint(member.chat_id)
        applied: list[ChangeRow] = []
        skipped: list[tuple[ChangeRow, ValueError]] = []
        for row in chosen:
            try:
                bp = BlueprintChange.from_row(row.kind, row.payload).apply(bp)
            except ValueError as err:  # BlueprintError included; the presenter words it
                skipped.append((row, err))
                continue
            applied.append(row)
        if applied:
            numbers = "、".join(str(c.id) for c in applied)
            await self._decide(member, [c.id for c in applied], "accepted", bp, numbers)
        if skipped:
            await self._decide(member, [c.id for c, _ in skipped], "rejected", None, "")
        return ChangesDecided(
            True,
            [c.as_change() for c in applied],
            tuple((c.as_change(), err) for c, err in skipped),
        )

    async def _decide(
        self, member: Member, ids: list[int], status: str, bp: Blueprint | None, numbers: str
    ) -> None:
        try:
            await self._store.decide_changes(
                member.chat_id,
                ids,
                status,
                member.user_id,
                self._clock(),
                blueprint=bp.to_json() if bp is not None else None,
                reason=f"accept:{numbers}" if bp is not None else "",
            )
        except LookupError:  # someone decided them a moment ago
            raise Refused("no_pending_changes") from None

    async def history(self, member: Member) -> BlueprintHistoryView:
        entries: list[tuple[str, str, str, str]] = []
        for rev in await self._store.blueprint_history(member.chat_id):
            try:
                title = str(json.loads(rev.data).get("title", ""))
            except ValueError:
                title = ""
            entries.append(
                (rev.changed_at.strftime("%Y-%m-%d %H:%M"), rev.changed_by, rev.reason, title)
            )
        decided = await self._store.decided_changes(member.chat_id)
        return BlueprintHistoryView(entries, [c.as_change() for c in decided])
