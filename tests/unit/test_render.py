"""Discord / Telegram renderers and the throttled streaming editor (fake clock)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from telegram.error import RetryAfter

from bot.ballot.board import native_ballot
from bot.render import discord as dr
from bot.render import telegram as tr
from bot.render.stream import ActionTable, StreamingEditor
from bot.reply import Attachment, Block, Button, Citation, Poll, Reply
from bot.transports.telegram_flood import FloodControl
from retrieval.clock import Clock as ProductClock
from tests.service_fakes import ballot_poll

# ---- Discord ---------------------------------------------------------------------------------


def test_discord_escapes_markdown_and_mentions() -> None:
    reply = Reply(
        lang="zh",
        blocks=[
            Block("标题 *粗*", "heading"),
            Block("@everyone 看 <@123> __x__"),
            Block("引", "quote"),
        ],
    )
    [message] = dr.render(reply)
    assert message.content.startswith("**标题 \\*粗\\***")
    assert "@everyone" not in message.content and "@\u200beveryone" in message.content
    assert "\\_\\_x\\_\\_" in message.content and "> 引" in message.content


@pytest.mark.parametrize("code", ["a```b", "````@everyone", "``````", "x`````y", "`` `` ```"])
def test_discord_code_block_cannot_be_closed_early(code: str) -> None:
    # "````@everyone" once closed the block and put a live mention outside it (found by
    # test_bad_input.py::test_discord_output_never_pings).
    [message] = dr.render(Reply(lang="zh", blocks=[Block(code, "code")]))
    assert message.content.count("```") == 2
    assert message.content.replace("\u200b", "") == f"```\n{code}\n```"


def test_discord_citations_poll_buttons_files() -> None:
    reply = Reply(
        lang="zh",
        blocks=[Block("答")],
        citations=[Citation("神的经纶，第三章", "神的经纶", "第三章", "神圣的分赐")],
        poll=ballot_poll("选哪个？", ("甲", "乙" * 100), "r1"),
        buttons=[Button("关闭", "close:r1")],
        attachments=[Attachment("ch.md", b"# x")],
    )
    [message] = dr.render(reply)
    assert "**出处**" in message.content and "【神的经纶，第三章】" in message.content
    assert [cid for _, cid in message.buttons] == ["vote:r1:1", "vote:r1:2", "close:r1"]
    assert all(len(label) <= 80 for label, _ in message.buttons)
    assert message.files == [("ch.md", b"# x")]


def test_telegram_shows_a_picture_by_its_mime_type_not_its_name() -> None:
    """A PNG declared as an image goes out as a photo; a file merely named `.png` stays a
    document, and a JPEG named anything is a photo."""
    reply = Reply(
        lang="zh",
        blocks=[Block("图")],
        attachments=[
            Attachment("graph.png", b"\x89PNG", "image/png"),
            Attachment("notes.png", b"# not a picture"),
            Attachment("scan", b"\xff\xd8", "image/jpeg"),
        ],
    )
    out = tr.render(reply)
    assert out.photos == [("graph.png", b"\x89PNG"), ("scan", b"\xff\xd8")]
    assert out.files == [("notes.png", b"# not a picture")]


def test_discord_long_custom_ids_are_shortened_and_restored() -> None:
    table = ActionTable(100)
    action = "vote:" + "r" * 120 + ":1"
    [message] = dr.render(Reply(lang="zh", buttons=[Button("x", action)]), table)
    [(_, custom_id)] = message.buttons
    assert len(custom_id) <= 100 and table.decode(custom_id) == action
    assert ActionTable(100).decode(custom_id) == ""  # unknown after a restart: expired


def test_discord_split_keeps_citations_and_order() -> None:
    text = "神圣的分赐是三一神的工作。【神的经纶，第三章】" * 300
    messages = dr.render(Reply(lang="zh", blocks=[Block(text)]))
    assert len(messages) > 1 and all(len(m.content) <= 2000 for m in messages)
    assert all(m.content.count("【") == m.content.count("】") for m in messages)


def test_discord_very_long_reply_goes_as_a_file() -> None:
    reply = Reply(lang="zh", blocks=[Block(f"第{i}段 " + "道" * 1900) for i in range(20)])
    messages = dr.render(reply)
    assert len(messages) == dr.MAX_PIECES
    assert messages[-1].files and messages[-1].files[0][0] == "reply.md"


# ---- Telegram --------------------------------------------------------------------------------


class _Balance(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.ok = True

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.ok = False


def balanced(html: str) -> bool:
    parser = _Balance()
    parser.feed(html)
    parser.close()
    return parser.ok and not parser.stack


def test_telegram_html_escapes_and_tags() -> None:
    reply = Reply(
        lang="zh",
        blocks=[
            Block("<标题> & co", "heading"),
            Block("x < y", "quote"),
            Block("print('<b>')", "code"),
            Block("注", "note"),
        ],
        citations=[Citation("书<名>，章", "书<名>", "章", "引文 & 注")],
    )
    out = tr.render(reply)
    [message] = out.messages
    html = message.html
    assert "<b>&lt;标题&gt; &amp; co</b>" in html
    assert "<blockquote>x &lt; y</blockquote>" in html
    assert "<pre>print('&lt;b&gt;')</pre>" in html and "<i>注</i>" in html
    assert "<b>出处</b>" in html and "【书&lt;名&gt;，章】" in html
    assert "<blockquote>引文 &amp; 注</blockquote>" in html
    assert balanced(html)


def test_telegram_english_citation_heading() -> None:
    reply = Reply(blocks=[Block("a")], citations=[Citation("1", "s", "c", "q")], lang="en")
    assert "<b>Sources</b>" in tr.render(reply).messages[0].html


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet="道&<>【】 \n。ab", min_size=1, max_size=3000),
            st.sampled_from(["text", "quote", "code", "heading", "item", "note"]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_telegram_pieces_fit_and_stay_balanced(blocks: list[tuple[str, str]]) -> None:
    reply = Reply(lang="zh", blocks=[Block(t, k) for t, k in blocks])  # type: ignore[arg-type]
    for message in tr.render(reply).messages:
        assert len(message.html) <= tr.LIMIT
        assert balanced(message.html), message.html[:200]


def test_telegram_quote_full_of_ampersands_still_fits() -> None:
    reply = Reply(lang="zh", blocks=[Block("&" * 2000, "quote")])
    messages = tr.render(reply).messages
    assert messages and all(len(m.html) <= tr.LIMIT and balanced(m.html) for m in messages)
    text = "".join(re.sub(r"</?blockquote>", "", m.html) for m in messages)
    assert text.count("&amp;") == 2000 and len(messages) == 3


def test_telegram_keyboard_or_native_poll_never_both() -> None:
    table = ActionTable(tr.CALLBACK_LIMIT)
    reply = Reply(
        lang="zh",
        blocks=[Block("投票")],
        poll=ballot_poll("下一章？", ("甲", "乙"), "x" * 70),
        buttons=[Button("关闭", "close:r")],
    )
    out = tr.render(reply, table)  # a keyboard ballot
    keyboard = out.messages[-1].keyboard
    assert keyboard is not None
    data = [row[0].callback_data for row in keyboard.inline_keyboard]
    assert len(data) >= 2 and all(len(str(d).encode()) <= 64 for d in data)
    assert table.decode(str(data[1])) == "vote:" + "x" * 70 + ":2"
    assert data[2] == "close:r"
    assert out.poll is None
    native = Reply(
        lang="zh",
        blocks=[Block("投票")],
        poll=ballot_poll("下一章？", ("甲", "乙"), "r", native=True),
        buttons=[Button("关闭", "close:r")],
    )
    out = tr.render(native, table)
    assert out.poll == ("下一章？", ["甲", "乙"])
    keyboard = out.messages[-1].keyboard
    assert keyboard is not None  # the other buttons stay; the options are in the poll only
    assert [row[0].callback_data for row in keyboard.inline_keyboard] == ["close:r"]


def test_telegram_single_option_poll_is_keyboard_only() -> None:
    # The ballot's owner decides (bot.ballot.board.native_ballot: one option is a keyboard, as
    # Telegram polls need 2–12); the renderer follows the flag so the help text matches.
    assert not native_ballot("poll", "telegram", 1)
    out = tr.render(Reply(lang="zh", poll=ballot_poll("?", ("甲",), "r", native=False)))
    assert out.poll is None and out.messages[-1].keyboard is not None


def test_plain_preview_fits() -> None:
    assert len(tr.plain_preview("&" * 5000)) <= tr.LIMIT
    assert tr.plain_preview("a<b") == "a&lt;b"


# ---- StreamingEditor -------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.t = 0.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds

    def as_clock(self) -> ProductClock:
        """The product's clock on this one's seconds and waits."""
        return ProductClock(monotonic=self.now, sleep=self.sleep)


class Sink:
    def __init__(self, fail_edits: list[BaseException] | None = None) -> None:
        self.log: list[tuple[str, str]] = []
        self.fail = list(fail_edits or [])

    async def send(self, text: str) -> None:
        self.log.append(("send", text))

    async def edit(self, text: str) -> None:
        if self.fail:
            raise self.fail.pop(0)
        self.log.append(("edit", text))


async def test_editor_throttles_and_delivers_final() -> None:
    clock, sink = Clock(), Sink()
    editor = StreamingEditor(sink.send, sink.edit, 1.5, clock=clock.as_clock())
    await editor.update("a")  # t=0: sent
    clock.t = 0.5
    await editor.update("ab")  # too soon: held
    clock.t = 1.0
    await editor.update("abc")  # still too soon
    clock.t = 1.6
    await editor.update("abcd")  # edit
    await editor.update("abcd")  # unchanged: nothing
    clock.t = 2.0
    await editor.finish("abcde")  # waits out the interval, then edits
    assert sink.log == [("send", "a"), ("edit", "abcd"), ("edit", "abcde")]
    assert clock.slept == [pytest.approx(1.1)]


async def test_editor_never_edits_unchanged_final() -> None:
    clock, sink = Clock(), Sink()
    editor = StreamingEditor(sink.send, sink.edit, 1.0, clock=clock.as_clock())
    await editor.update("done")
    await editor.finish("done")
    assert sink.log == [("send", "done")]


async def test_editor_finish_without_stream_sends_once() -> None:
    clock, sink = Clock(), Sink()
    editor = StreamingEditor(sink.send, sink.edit, 1.0, clock=clock.as_clock())
    await editor.finish("final")
    assert sink.log == [("send", "final")] and clock.slept == []


async def test_editor_honours_retry_after() -> None:
    """Flood control is Telegram's one request-level layer (`FloodControl`), not the editor's:
    a 429 is waited out on the clock, as long as Telegram said, and the same edit sent again;
    the retry budget (two) spent, the error reaches the caller."""
    clock = Clock()
    sink = Sink([RetryAfter(3), RetryAfter(2)])
    flood = FloodControl(clock.as_clock())

    async def edit(text: str) -> object:
        return await flood.process_request(
            sink.edit, (text,), {}, "editMessageText", {"chat_id": 42}, None
        )

    editor = StreamingEditor(sink.send, edit, 1.5, clock=clock.as_clock())
    await editor.update("a")
    clock.t = 2.0
    await editor.update("ab")  # 429 twice: waits 3 s, then 2 s, then the edit goes through
    assert clock.slept == [3.0, 2.0] and sink.log == [("send", "a"), ("edit", "ab")]
    sink.fail = [RetryAfter(1), RetryAfter(1), RetryAfter(1)]
    with pytest.raises(RetryAfter):
        await editor.finish("abc")  # three 429s in a row: the budget is spent
    assert clock.slept[2:] == [pytest.approx(1.5), 1.0, 1.0]
    assert sink.log == [("send", "a"), ("edit", "ab")]


async def test_editor_update_swallows_errors_but_finish_raises() -> None:
    clock = Clock()
    sink = Sink([RuntimeError("boom"), RuntimeError("boom")])
    editor = StreamingEditor(sink.send, sink.edit, 0.0, clock=clock.as_clock())
    await editor.update("a")
    await editor.update("ab")  # swallowed
    with pytest.raises(RuntimeError):
        await editor.finish("abc")


def test_vote_actions_come_from_the_codec() -> None:
    """Every transport puts on a ballot option the action the ballot room encoded with its
    codec (`VoteButton(round, i).action`, the one the router decodes) and never builds one by
    hand."""
    from bot.ballot.codec import VoteButton
    from bot.render import console as cr

    wanted = [VoteButton("r42", i).action for i in (1, 2, 3)]
    options = tuple(Button(label, a) for label, a in zip(("甲", "乙", "丙"), wanted, strict=True))
    poll = Poll("下一章？", options, "r42")
    reply = Reply(lang="zh", blocks=[Block("投票")], poll=poll)
    table = ActionTable(tr.CALLBACK_LIMIT)
    keyboard = tr.render(reply, table).messages[-1].keyboard
    assert keyboard is not None
    assert [table.decode(str(row[0].callback_data)) for row in keyboard.inline_keyboard] == wanted
    dtable = ActionTable(dr.CUSTOM_ID_LIMIT)
    assert [dtable.decode(cid) for _, cid in dr.buttons(reply, dtable)] == wanted
    assert cr.actions(reply) == wanted
    assert [VoteButton.read(a) for a in wanted][1] == VoteButton("r42", 2)
