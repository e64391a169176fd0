"""`Reply` is immutable and carries its language from construction."""

from __future__ import annotations

import dataclasses

import pytest

from bot.reply import Block, Reply


def test_reply_is_frozen_with_tuples() -> None:
    blocks = [Block("甲")]
    reply = Reply(blocks=blocks, lang="en")  # type: ignore[arg-type]  # a list, as a caller might
    blocks.append(Block("乙"))
    assert reply.blocks == (Block("甲"),) and reply.lang == "en"
    with pytest.raises(dataclasses.FrozenInstanceError):
        reply.lang = "zh"  # type: ignore[misc]
    assert hash(Reply.text("a", lang="zh")) == hash(Reply.text("a", lang="zh"))


def test_language_is_required() -> None:
    with pytest.raises(TypeError):
        Reply.text("a")  # type: ignore[call-arg]
    assert Reply.error("不行", lang="zh").is_error
