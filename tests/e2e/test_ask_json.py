"""`baibao ask --json` on the real stack (App: Qdrant Edge + SQLite, BM25, graph; hash
embedder): the words go through the /ask command's own parsing, so bad input gets the usage
message a chat would get, in the user's language, and a non-zero exit; a good answer carries
`mode`, and each citation its `quote` and `chapter`. The model, when there is one, is the
loopback OpenAI-compatible server (tests/stubs/llm_server.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.cli import _one_shot, _parser
from retrieval.fakes import HashEmbedder
from tests.e2e.test_full_stack import DIM, _settings
from tests.stubs.fixtures import llm_settings
from tests.stubs.llm_server import LLMStubServer, Scripted, openai_completion, openai_stream

QUESTION = "召会是什么的结果？"


async def _ask(app: App, *words: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `baibao ask --json WORDS…` against `app`."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    args = _parser().parse_args(["ask", "--json", *words])
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = await _one_shot(app, args)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("words", "says"),
    [
        (("书:", QUESTION), "筛选条件「书:」后面要写值"),
        (("source:", "What is the church?"), "the filter “source:” needs a value"),
        (("类型:poem", QUESTION), "类型「poem」不存在；可用：book / message / outline"),
        (("type:poem", "What is the church?"), "no type “poem”; use one of book / message"),
        (("书:神圣的分赐与召会",), "请在筛选条件后面写下问题"),
        (("长" * 1001,), "1000"),
        (("书:不存在的书", QUESTION), "语料中没有「不存在的书」这本书"),
        (("source:Nowhere", "What is the church?"), "The corpus holds no source “Nowhere”"),
    ],
)
async def test_bad_input_gets_the_ask_commands_message_and_a_non_zero_exit(
    data_dir: Path, words: tuple[str, ...], says: str
) -> None:
    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        status, out, err = await _ask(app, *words)
    assert status == 2 and out == "", out
    assert says in err, err
    assert "没有直接论及" not in err and "not directly address" not in err


async def test_type_filter_is_mapped_like_the_ask_command(data_dir: Path) -> None:
    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        status, out, err = await _ask(app, "类型:纲目", "新约职事的内容是什么？")
    assert status == 0, err
    answer = json.loads(out)
    assert answer["addressed"] is True and answer["citations"]
    # 纲目 is the outline type: every cited passage is an outline unit, none raw "纲目"
    types = {c["label"].split("，")[0] for c in answer["citations"]}
    assert types <= {"新约职事", "神圣分赐的三个阶段"}, types


def _check_good_answer(answer: dict[str, Any], mode: str) -> None:
    assert set(answer) >= {"question", "mode", "addressed", "answer", "citations", "graph_paths"}
    assert answer["mode"] == mode and answer["addressed"] is True
    assert answer["question"] == QUESTION
    assert answer["citations"]
    for cited in answer["citations"]:
        assert {"label", "source", "chapter", "quote", "chunk_id", "verified"} <= set(cited)
        assert cited["quote"].strip() and cited["chunk_id"]
        assert cited["label"].startswith(cited["source"])
        assert isinstance(cited["chapter"], str)


async def test_a_good_answer_offline_is_extractive_with_quotes_and_chapters(
    data_dir: Path,
) -> None:
    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        status, out, err = await _ask(app, "书:神圣的分赐与召会", QUESTION)
    assert status == 0, err
    answer = json.loads(out)
    _check_good_answer(answer, "extractive")
    assert all(c["source"] == "神圣的分赐与召会" and c["verified"] for c in answer["citations"])


async def test_a_good_answer_with_an_openai_compatible_model(
    data_dir: Path, llm_wire: LLMStubServer
) -> None:
    def model(body: dict[str, Any]) -> Scripted:
        text = "职事明确教导\n召会是神圣分赐的结果。[1]\n\n推论\n无"
        if body.get("stream"):
            return Scripted.sse(openai_stream(text))
        return Scripted.json(openai_completion(text))

    llm_wire.openai_responder = model
    settings = _settings(data_dir, **llm_settings(llm_wire, "openai"))
    async with App(settings, embedder=HashEmbedder(DIM)) as app:
        status, out, err = await _ask(app, "书:神圣的分赐与召会", QUESTION)
    assert status == 0, err
    answer = json.loads(out)
    _check_good_answer(answer, "llm")
    assert "【神圣的分赐与召会，" in answer["answer"]
    assert all(c["verified"] for c in answer["citations"])
    assert len(llm_wire.requests_to("/v1/chat/completions")) == 1
