"""The chat's person and the writers' room's member map field by field (`member_of` /
`actor_of`): a field added to one and not the other fails here, not at a user's command. The
member is in the story of the place they spoke in, and is addressed in that story's chat."""

from __future__ import annotations

from dataclasses import fields

from bot.actor import Actor
from bot.presenters.novel import actor_of, member_of, place_of
from novel.member import Member, Place


class OneStoryHere:
    """A directory where chat -1001's topic 7 holds story "story:a"."""

    def story_at(self, place: Place) -> str:
        return "story:a" if (place.chat_id, place.channel_id) == ("-1001", "7") else place.chat_id

    def chat_of(self, story_id: str) -> str:
        return "-1001" if story_id == "story:a" else story_id


def test_a_member_has_an_actors_fields_but_its_roles_platform_and_place_details() -> None:
    """The room keeps the platform only as the opaque `via` it hands back; the place's parent
    and name only find the place's story (`place_of`); the kind of chat and the role the
    permission table read are the chat layer's."""
    actor_fields = {f.name for f in fields(Actor)} - {"roles", "platform", "kind", "role"}
    place_details = {"parent_id", "channel_name"}
    assert {f.name for f in fields(Member)} == (actor_fields - place_details) | {"via"}
    assert [f.name for f in fields(Place)] == ["chat_id", "channel_id", "parent_id", "name"]


def test_actor_to_member_and_back_keeps_everything_but_roles() -> None:
    places = OneStoryHere()
    actor = Actor("telegram", "-1001", "42", "路得", "8", True, ("editor",), "en")
    assert member_of(actor, places) == Member("-1001", "42", "路得", "8", True, "en", "telegram")
    assert actor_of(member_of(actor, places), places) == Actor(
        "telegram", "-1001", "42", "路得", "8", True, (), "en"
    )


def test_a_member_in_a_place_with_its_own_story_is_in_that_story_and_spoken_to_in_its_chat() -> (
    None
):
    places = OneStoryHere()
    actor = Actor("telegram", "-1001", "42", "路得", "7", lang="en", channel_name="小说")
    assert place_of(actor) == Place("-1001", "7", "", "小说")
    member = member_of(actor, places)
    assert member == Member("story:a", "42", "路得", "7", False, "en", "telegram")
    assert actor_of(member, places) == Actor("telegram", "-1001", "42", "路得", "7", lang="en")
