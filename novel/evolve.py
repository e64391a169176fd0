"""The blueprint follows the story: after each chapter, changes are proposed from its summary
(status changes, new characters, relationships); an admin accepts or rejects them.

A change is data (kind + payload) so it can wait in SQLite; `apply` re-validates the whole
blueprint, so an accepted change can never leave it invalid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from novel import narrative
from novel.blueprint import Blueprint, BlueprintError, Character, validate
from novel.summary import ChapterSummary

ChangeKind = Literal["status", "character", "relationship"]


@dataclass(frozen=True, slots=True)
class BlueprintChange:
    kind: ChangeKind
    name: str  # the character
    value: str  # the new status / the description / what `other` is to `name`
    other: str = ""  # relationship: with whom
    before: str = ""  # status: the old one (shown to the admin)

    def payload(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "other": self.other, "before": self.before}

    @classmethod
    def from_row(cls, kind: str, payload: dict[str, Any]) -> BlueprintChange:
        if kind not in ("status", "character", "relationship"):
            raise ValueError(kind)
        return cls(
            kind,  # type: ignore[arg-type]
            str(payload.get("name", "")),
            str(payload.get("value", "")),
            str(payload.get("other", "")),
            str(payload.get("before", "")),
        )

    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.name, self.other)

    def apply(self, bp: Blueprint) -> Blueprint:
        """The blueprint with this change; BlueprintError when it no longer applies."""
        data = bp.model_dump()
        chars: list[dict[str, Any]] = data["characters"]
        target = next(
            (c for c in chars if c["name"] == self.name or self.name in c.get("aliases", [])),
            None,
        )
        if self.kind == "character":
            if target is not None:
                raise BlueprintError(
                    f"人物“{self.name}”已在世界设定中", f"“{self.name}” is already in the blueprint"
                )
            chars.append(Character(name=self.name, description=self.value[:2000]).model_dump())
        elif target is None:
            raise BlueprintError(
                f"世界设定中没有人物“{self.name}”", f"the blueprint has no character “{self.name}”"
            )
        elif self.kind == "status":
            target["status"] = self.value
        else:
            target.setdefault("relationships", {})[self.other] = self.value
        return validate(data)


def propose(
    bp: Blueprint, summary: ChapterSummary, pending: list[BlueprintChange] | None = None
) -> list[BlueprintChange]:
    """What the chapter's summary says changed, minus what the blueprint (or a pending
    proposal) already says."""
    waiting = {c.key(): c for c in pending or ()}
    out: dict[tuple[str, str, str], BlueprintChange] = {}

    def add(change: BlueprintChange) -> None:
        same = waiting.get(change.key())
        if same is not None and (same.value == change.value or change.kind == "character"):
            return  # a newcomer already proposed stays one proposal, whatever a later quote
        out.setdefault(change.key(), change)

    new_people = _new_characters(bp, summary)
    for change in new_people:
        add(change)
    for change in _status_changes(bp, summary):
        add(change)
    for change in _relationship_changes(bp, summary, {c.name for c in new_people}):
        add(change)
    return list(out.values())


def _new_characters(bp: Blueprint, summary: ChapterSummary) -> list[BlueprintChange]:
    """People the blueprint lacks: described ones first, then names the summary mentions
    (common words left out)."""
    found: list[BlueprintChange] = []
    names: set[str] = set()
    for nc in summary.new_characters:
        name = nc.name.strip()
        if 2 <= len(name) <= 40 and bp.character(name) is None:
            found.append(BlueprintChange("character", name, nc.description.strip()))
            names.add(name)
    for name in summary.characters:
        name = name.strip()
        if 2 <= len(name) <= 40 and bp.character(name) is None and name not in names:
            if not narrative.common_word(name):
                found.append(BlueprintChange("character", name, ""))
                names.add(name)
    return found


def _status_changes(bp: Blueprint, summary: ChapterSummary) -> list[BlueprintChange]:
    out = []
    for sc in summary.status_changes:
        character = bp.character(sc.name.strip())
        status = sc.status.strip()[:40]
        if character is None or not status or character.status == status:
            continue
        if narrative.dead(character.status) and narrative.dead(status):
            continue
        out.append(BlueprintChange("status", character.name, status, before=character.status))
    return out


def _relationship_changes(
    bp: Blueprint, summary: ChapterSummary, new_names: set[str]
) -> list[BlueprintChange]:
    out = []
    for rel in summary.relationships:
        a = bp.character(rel.a.strip())
        b = bp.character(rel.b.strip())
        a_name = a.name if a else rel.a.strip()
        b_name = b.name if b else rel.b.strip()
        if a is None and a_name not in new_names:
            continue
        relation = rel.relation.strip()[:40]
        if not relation or a_name == b_name:
            continue
        if a is not None and a.relationships.get(b_name) == relation:
            continue
        out.append(BlueprintChange("relationship", a_name, relation, other=b_name))
    return out
