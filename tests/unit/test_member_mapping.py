"""The chat's person and the writers' room's member map field by field (`member_of` /
`actor_of`): a field added to one and not the other fails here, not at a user's command."""

from __future__ import annotations

from dataclasses import fields

from bot.actor import Actor
from bot.presenters.novel import CHAT_ONLY, actor_of, member_of
from novel.member import Member


def test_a_member_has_an_actors_fields_but_its_roles() -> None:
    actor_fields = [f.name for f in fields(Actor)]
    assert [f.name for f in fields(Member)] == [n for n in actor_fields if n not in CHAT_ONLY]


def test_actor_to_member_and_back_keeps_everything_but_roles() -> None:
    actor = Actor("telegram", "-1001", "42", "路得", "7", True, ("editor",), "en")
    assert member_of(actor) == Member("telegram", "-1001", "42", "路得", "7", True, "en")
    assert actor_of(member_of(actor)) == Actor(
        "telegram", "-1001", "42", "路得", "7", True, (), "en"
    )
