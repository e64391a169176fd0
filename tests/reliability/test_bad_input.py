"""Bad input on the real stack: every outcome is a clear reply, never an exception, never a
half-written store. Property tests (Hypothesis) with modest example counts."""

from __future__ import annotations

import html.parser
import json
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.actor import Actor
from bot.app import App
from bot.commands import standard_registry
from bot.presenters.scripture import scripture_error_text
from bot.registry import Call, Upload
from bot.render import discord as dr
from bot.render import telegram as tr
from bot.reply import Block, Button, Citation, Reply
from bot.router import Invocation, Line
from novel import api as novel_api
from novel.blueprint import default_blueprint, parse_upload, validate
from retrieval import scripture
from retrieval.types import Filter
from tests.reliability.helpers.stack import Loop, with_app
from tests.service_fakes import RecordingBallots, RecordingNovels, RecordingScholar

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Characters that break naive parsers and renderers.
NASTY = st.sampled_from(
    [
        "\x00",
        "\x1b[31m",
        "\r",
        "\u202e",  # right-to-left override
        "\u200f",  # right-to-left mark
        "\u200b",  # zero-width space
        "\u2066",
        "\ufeff",
        "👨‍👩‍👧",
        "🙏",
        "<b>",
        "</i>",
        "&amp;",
        "**",
        "`",
        "```",
        "@everyone",
        "@here",
        "<@123456789012345678>",
        "<@&123456789012345678>",
        "|",
        "｜",
        "/",
        "／",
        "\n",
        "弗1:10",
        "</document>",
    ]
)
TEXT = st.lists(st.one_of(st.text(max_size=40), NASTY), max_size=12).map("".join)
REGISTRY = standard_registry(RecordingScholar(), RecordingNovels(), RecordingBallots())
HEADS = st.sampled_from(
    ["", "/", "／", "/ask ", "/cite ", "/help ", "/nosuch ", "/ask@baibao_bot ", "/ask@other "]
    + [f"/{' '.join(path)} " for path, _ in REGISTRY.commands() if len(path) > 1]
    + [f"/{e.name} " for e in REGISTRY]
    + ["/novel characters ", "/novel recap ", "/novel map "]  # the app's registry has them
)
ACTORS = st.sampled_from(
    [
        Actor("telegram", "g1", "u1"),
        Actor("discord", "g2", "u2", is_admin=True),
        Actor("console", "console", "me", lang="en"),
    ]
)


def test_router_never_raises_on_arbitrary_lines(tmp_path: Path) -> None:
    def body(app: App, loop: Loop) -> None:
        @FUZZ
        @given(HEADS, TEXT, ACTORS, st.one_of(st.none(), st.binary(max_size=300)))
        def case(head: str, text: str, actor: Actor, attachment: bytes | None) -> None:
            line = head + text
            reply = loop.run(
                app.router.answer(
                    Invocation(
                        actor,
                        Line(line, bot_username="baibao_bot"),
                        upload=None if attachment is None else Upload.of(attachment),
                    )
                )
            )
            if reply is None:  # only for a command addressed to another bot, or a bare "/"
                assert line.strip().startswith(("/", "／"))
                return
            assert isinstance(reply, Reply)
            assert reply.plain().strip() or reply.attachments
            assert "Traceback" not in reply.plain()

        case()

    with_app(tmp_path / "data", body)


async def test_huge_empty_and_control_only_questions(tmp_path: Path) -> None:
    from tests.reliability.helpers.stack import open_app

    actor = Actor("telegram", "g1", "u1")
    async with open_app(tmp_path / "data") as app:
        cases = {
            "/ask " + "长" * 200_000: "太长了",
            "/ask": "缺少参数「问题」",
            "/ask \x00\x01\x02\u200b": "缺少参数「问题」",  # control characters only
            "/ask " + "\u202e" * 50: "缺少参数「问题」",  # direction overrides only
            "/cite " + "弗" * 10_000: "「经文出处」太长了（10000 字）",
            "/chapter propose " + "|" * 5000: "缺少参数「标题」",
        }
        for line, needle in cases.items():
            reply = await app.router.answer(Invocation(actor, Line(line)))
            assert reply is not None and reply.is_error, line[:40]
            assert needle in reply.plain(), (line[:40], reply.plain())


@FUZZ
@given(
    st.one_of(st.text(max_size=300), st.text(st.sampled_from("弗约:：-,;一十章节 1"), max_size=80))
)
def test_scripture_normalise_and_parse_never_break(text: str) -> None:
    """Gap next to tests/unit/test_scripture.py::test_arbitrary_text_never_breaks: the
    prose normaliser on control characters, bidi marks and long text."""
    for probe in (text, "\u202e" + text, text + "\x00" * 3, text * 20):
        scripture.normalise_refs(probe)
        try:
            scripture.parse_reference(probe)
        except scripture.ScriptureError as err:
            assert scripture_error_text(err, "zh") and scripture_error_text(err, "en")


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def _mutated_blueprint() -> st.SearchStrategy[bytes]:
    base = json.loads(default_blueprint().to_json())
    keys = sorted(base)
    return st.tuples(st.sampled_from(keys), JSONISH).map(
        lambda kv: json.dumps({**base, kv[0]: kv[1]}, ensure_ascii=False).encode()
    )


BLUEPRINT_BYTES = st.one_of(
    st.binary(max_size=400),
    JSONISH.map(lambda v: json.dumps(v).encode()),
    _mutated_blueprint(),
    st.just(b"\xff\xfe" + "{".encode("utf-16-le")),
    st.just(b"{" * 5000),
    st.just(b'{"title": "' + b"x" * 300_000 + b'"}'),
)


def test_blueprint_upload_clear_message_and_unchanged(tmp_path: Path) -> None:
    admin = Actor("telegram", "g-bp", "admin", is_admin=True)

    def body(app: App, loop: Loop) -> None:
        novels = app.novels
        repo = novels.service.repo

        @FUZZ
        @given(BLUEPRINT_BYTES)
        def case(data: bytes) -> None:
            before = loop.run(repo.world.blueprint_json(admin.chat_id))
            reply = loop.run(novels.handlers.run(Call(admin), novel_api.BlueprintSet(data)))
            after = loop.run(repo.world.blueprint_json(admin.chat_id))
            if reply.is_error:
                assert reply.plain().strip() and "Traceback" not in reply.plain()
                assert after == before or before is None, "rejected upload changed the blueprint"
            else:
                # Accepted: what is stored is exactly the upload, validated.
                assert after is not None
                assert validate(json.loads(after)) == parse_upload(data, 10**7)

        case()

    with_app(tmp_path / "data", body, corpus=False)


_PRODUCED = Path(__file__).resolve().parents[1] / "fixtures" / "layout"


def _damaged() -> st.SearchStrategy[bytes]:
    """A file a real producer wrote (pandoc .docx, WeasyPrint PDF), cut short (to at most half:
    a whole book would only cost time) and with bytes flipped."""
    files = [
        (_PRODUCED / n).read_bytes() for n in ("outline-pandoc.docx", "proverbs-weasyprint-en.pdf")
    ]

    def damage(data: bytes, share: float, changes: list[tuple[float, int]]) -> bytes:
        out = bytearray(data[: max(1, int(len(data) * share))])
        for at, value in changes:
            out[int(at * (len(out) - 1))] = value
        return bytes(out)

    flips = st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=8)
    return st.builds(damage, st.sampled_from(files), st.floats(0.01, 0.5), flips)


def _loader_bytes() -> st.SearchStrategy[bytes]:
    text = st.text(max_size=400)
    return st.one_of(
        _damaged(),
        st.binary(max_size=600),
        st.tuples(st.just(b"%PDF-1.4\n"), st.binary(max_size=400)).map(b"".join),
        st.tuples(st.just(b"PK\x03\x04"), st.binary(max_size=400)).map(b"".join),
        text.map(lambda t: t.encode("utf-8")),
        text.map(lambda t: t.encode("gb18030", "ignore")),
        text.map(lambda t: ("# 标题\n\n" + t).encode("utf-16")),
    )


def test_loaders_skip_with_reason_or_ingest_never_half(tmp_path: Path) -> None:
    from ingest.pipeline import Pipeline

    counter = iter(range(1_000_000))

    def body(app: App, loop: Loop) -> None:
        pipeline = Pipeline(app.indexer)
        folder = tmp_path / "fuzz"
        folder.mkdir()

        @FUZZ
        @given(st.sampled_from([".pdf", ".docx", ".doc", ".epub", ".txt", ".md"]), _loader_bytes())
        def case(ext: str, data: bytes) -> None:
            path = folder / f"f{next(counter)}{ext}"
            path.write_bytes(data)
            summary = loop.run(pipeline.ingest_paths([path]))
            assert len(summary.skipped) + len(summary.results) >= 1
            for _, reason in summary.skipped:
                assert reason.strip()
                assert "Traceback" not in reason
            for doc in loop.run(app.indexer.documents()):
                n = loop.run(
                    app.store.count(Filter(equals={"namespace": "corpus", "doc_id": doc.doc_id}))
                )
                assert n == doc.chunk_count, f"{doc.path}: {n} points, {doc.chunk_count} chunks"

        case()

    with_app(tmp_path / "data", body, corpus=False)


# ---- renderers ------------------------------------------------------------------------------

TELEGRAM_TAGS = {"b", "i", "u", "s", "code", "pre", "blockquote", "a", "tg-spoiler"}


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.bad: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TELEGRAM_TAGS:
            self.bad.append(tag)
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.bad.append("/" + tag)


REPLIES = st.builds(
    lambda blocks, cites, error: Reply(
        lang="zh",
        blocks=[Block(t, k) for t, k in blocks],
        citations=[Citation(a, b, c, d) for a, b, c, d in cites],
        buttons=[Button("投票 <1> @everyone", "vote:r1:1")],
        is_error=error,
    ),
    st.lists(
        st.tuples(TEXT, st.sampled_from(["text", "quote", "code", "heading", "item", "note"])),
        min_size=1,
        max_size=5,
    ),
    st.lists(st.tuples(TEXT, TEXT, TEXT, TEXT), max_size=3),
    st.booleans(),
)


@FUZZ
@given(REPLIES)
def test_telegram_html_is_valid_allowed_and_balanced(reply: Reply) -> None:
    for message in tr.render(reply).messages:
        parser = _Tags()
        parser.feed(message.html)
        parser.close()
        assert not parser.bad and not parser.stack, (parser.bad, message.html[:300])
        assert len(message.html) <= tr.LIMIT and tr.units(message.html) <= tr.LIMIT


# What Discord parses as a mention: @everyone / @here, and <@id> <@!id> <@&id> with a snowflake.
PING = re.compile(r"@(everyone|here)|<@[!&]?\d{17,20}>")


@FUZZ
@given(REPLIES)
def test_discord_output_never_pings(reply: Reply) -> None:
    assert dr.NO_MENTIONS.everyone is False
    assert dr.NO_MENTIONS.users is False and dr.NO_MENTIONS.roles is False
    for message in dr.render(reply):
        assert len(message.content) <= dr.LIMIT
        # escape_mentions inserts a zero-width space after "@": no raw mention survives outside
        # code blocks (code is shown verbatim; there allowed_mentions=none is the guard)
        outside = re.sub(r"```.*?```", "", message.content, flags=re.DOTALL)
        assert not PING.search(outside), message.content[:300]
        # (button labels are components: Discord never parses mentions in them)
