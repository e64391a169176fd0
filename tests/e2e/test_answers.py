"""Issue 10 on the real stack (App: Qdrant Edge + SQLite, BM25, graph; console transport;
hash embedder): questions the corpus does not address are declined (with related reading only
where it is related, issue 24), and every label a new user sees is true to the document — on
book files with no manifest.

The book files in tests/fixtures/books are original texts written for these tests; the
outline is the bundled sample, ingested as a new user would (no manifest, file name as title).
"""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

from bot.actor import Actor
from bot.app import App
from bot.router import Invocation, Line
from bot.transports.telegram import TelegramTransport
from ingest.pipeline import Pipeline
from ingest.samples import SAMPLES_DIR
from retrieval.answer.result import Answer, Cited
from retrieval.fakes import HashEmbedder
from retrieval.requests import AskRequest
from tests.discord_sim import answer_text, discord_app
from tests.e2e.test_full_stack import DIM, _console, _settings
from tests.stubs.fixtures import telegram_settings
from tests.stubs.telegram_server import TelegramServer

BOOKS = Path(__file__).resolve().parents[1] / "fixtures" / "books"
ZH = Actor("console", "console", "u1")
EN = Actor("console", "console", "u1", lang="en")


NOTHING_NEAR = "语料中也没有与这个问题相近的内容"
RELATED = "相关参考（仅供延伸阅读，并非这个问题的答案）"


async def test_unaddressed_questions_are_declined_with_related_reading(data_dir: Path) -> None:
    """Related reading only where it is related (issue 24): a near miss (呼求主名, which the
    samples touch but do not answer) keeps it; the weather, cooking or quantum computers get
    none, and the reply says the corpus has nothing near them."""
    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        weather = await _console(app, "/ask 今天天气怎么样？")
        cooking = await _console(app, "/ask 红烧肉怎么做才好吃？")
        quantum = await _console(app, "/ask 量子计算机的原理是什么？")
        english = await _console(app, "/ask What's the weather like today?")
        baptism = await _console(app, "/ask 婴儿应该受洗吗？")
        near = await _console(app, "/ask 呼求主名有什么用处？")
        answered = await _console(app, "/ask 神圣的分赐是什么意思？")
    for reply in (weather, cooking, quantum, baptism, near):
        assert "职事语料中没有直接论及" in reply
        assert "未使用语言模型" not in reply and "-- 出处 --" not in reply
    for reply in (weather, cooking, quantum, baptism):
        assert NOTHING_NEAR in reply and RELATED not in reply and "【" not in reply, reply
    assert RELATED in near and "【" in near and NOTHING_NEAR not in near
    assert "does not directly address" in english and "-- Sources --" not in english
    assert "Nothing close to it is in the corpus" in english and "Related reading" not in english
    assert "未使用语言模型" in answered and "-- 出处 --" in answered
    assert "没有直接论及" not in answered


async def test_bible_hits_are_cited_with_the_verse_in_the_reply_language(data_dir: Path) -> None:
    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        zh = await app.router.answer(
            Invocation(ZH, Line("/ask 弗1:10 在日期满足的时候同归于一是什么意思？"))
        )
        en = await app.scholar.answer(
            EN.lang, AskRequest("What does Eph. 1:10 say about all things?")
        )
    assert zh is not None
    labels = [c.label for c in zh.citations]
    assert "和合本，弗1:10" in labels, labels
    assert all("和合本（1919）" not in label for label in labels)
    assert all(", " in c.label.text("en") for c in en.citations)
    assert all("，" not in c.label.text("en") for c in en.citations if c.chunk.type == "bible")


async def test_a_new_users_books_are_labelled_true_to_the_document(tmp_path: Path) -> None:
    folder = tmp_path / "books"
    folder.mkdir()
    for name in ("神的经纶.txt", "生命的经历.txt"):
        shutil.copy(BOOKS / name, folder / name)
    shutil.copy(SAMPLES_DIR / "outline-01-nt-ministry.txt", folder / "新约职事.txt")
    async with App(_settings(tmp_path / "data"), embedder=HashEmbedder(DIM), llm=None) as app:
        summary = await Pipeline(app.indexer).ingest_paths([folder])
        assert summary.skipped == [] and summary.documents == 3
        economy = await app.scholar.answer(ZH.lang, AskRequest("神的经纶与人的灵有什么关系？"))
        share = await app.scholar.answer(ZH.lang, AskRequest("今日对新约职事的有分是什么意思？"))
        life = await app.scholar.answer(ZH.lang, AskRequest("生命长大的条件有哪些？"))
    headings = {
        "神的经纶": {
            "第一章 神的经纶的意义",
            "第二章 神的经纶与基督的身体",
            "第三章 神的经纶与人的灵",
        },
        "生命的经历": {
            "第一章 生命的经历与生命的长大",
            "第二章 生命长大的条件",
            "第三章 生命的成熟",
        },
    }
    labels = {c.label.text("zh") for a in (economy, share, life) for c in a.citations}
    assert "神的经纶，第三章 神的经纶与人的灵" in labels
    assert any(x.startswith("新约职事，肆　今日对新约职事的有分") for x in labels), labels
    assert "生命的经历，第二章 生命长大的条件" in labels
    for answer in (economy, share, life):
        assert answer.addressed and answer.citations
        for cited in answer.citations:
            title, _, place = cited.label.text("zh").partition("，")
            assert title in {"神的经纶", "生命的经历", "新约职事"}
            if title in headings:
                assert place in headings[title]  # the document's own heading, whole
            else:  # an outline unit: its point's heading line, whole, from the file
                head = place.split(" > ")[0].split("；")[0]
                assert head in (folder / "新约职事.txt").read_text(encoding="utf-8")
            # the quote is a whole sentence of the passage, never a bare reference
            assert cited.quote.rstrip("…") in cited.chunk.text
            assert not re.fullmatch(r"[\d:：;；,，.。()（）\s–-]+", cited.quote)


async def test_telegram_carries_the_decline_and_the_labels(
    data_dir: Path, telegram_wire: TelegramServer
) -> None:
    """The same on the wire: the loopback Telegram Bot API (PTB's own HTTP, getUpdates), over
    the real App."""
    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        telegram = TelegramTransport(
            app.router,
            telegram_settings(telegram_wire),
            edit_interval_s=0.0,
            clock=telegram_wire.clock,
        )
        async with telegram:
            lines = ("/ask 今天天气怎么样？", "/cite 弗1:10", "/ask 量子计算机的原理是什么？")
            for count, line in enumerate(lines, start=1):
                telegram_wire.push_command(line)
                await telegram_wire.wait_for("sendMessage", count)
        sent = [str(c.params.get("text", "")) for c in telegram_wire.named("sendMessage")]
        weather = next(t for t in sent if "今天天气怎么样" in t)
        quantum = next(t for t in sent if "量子计算机的原理是什么" in t)
        for declined in (weather, quantum):  # off-topic: no related reading, and it says so
            assert "职事语料中没有直接论及" in declined and NOTHING_NEAR in declined, declined
            assert "相关参考" not in declined and "【" not in declined, declined
        cite = "\n".join(t for t in sent if "弗1:10" in t)
        assert cite.count("要照所安排的，在日期满足的时候") == 1 and "和合本（1919）" in cite


async def test_discord_carries_the_source_filter(data_dir: Path) -> None:
    """Through SimCord (`DiscordTransport`'s own client), over the real App: /ask with a
    source filter cites that source only."""
    async with discord_app(_settings(data_dir, discord_token="simcord")) as (_, server):
        asked = await server.member("alice").slash(
            server.channel, "ask", question="保罗职事的来源是什么？", source="新约职事"
        )
        posted = answer_text(asked)
    assert "【新约职事，" in posted
    sources = re.findall(r"【([^，】]+)，", posted)
    assert sources and set(sources) == {"新约职事"}  # the source filter held


def _cuv(book: str) -> dict[int, list[str]]:
    """One book of the bundled CUV (public domain), chapter → verses, in Simplified."""
    from ingest.samples import CUV_TABLE
    from retrieval.text import to_simplified

    chapters: dict[int, list[str]] = {}
    with gzip.open(CUV_TABLE, "rt", encoding="utf-8") as fh:
        for line in fh:
            osis, chapter, _, text = [*line.rstrip("\n").split("\t"), "", "", ""][:4]
            if osis == book and text.strip():
                chapters.setdefault(int(chapter), []).append(to_simplified(text))
    return chapters


async def test_book_files_built_from_the_cuv_are_labelled_true_to_the_file(
    tmp_path: Path,
) -> None:
    """Text the team did not write, in the shapes users have: a Markdown book whose H1 is its
    title and whose chapter headings repeat it (## 诗篇第二十三篇), and a GBK text file whose
    chapters are `第一章` lines — no manifest for either."""
    numerals = "零一二三四五六七八九十"

    def zh(n: int) -> str:
        if n <= 10:
            return numerals[n]
        tens, ones = divmod(n, 10)
        return ("" if tens == 1 else numerals[tens]) + "十" + (numerals[ones] if ones else "")

    folder = tmp_path / "cuv-books"
    folder.mkdir()
    psalms = _cuv("Ps")
    lines = ["# 诗篇", ""]
    for n in (22, 23, 24):
        lines += [f"## 诗篇第{zh(n)}篇", "", *(f"{v}\n" for v in psalms[n])]
    (folder / "诗篇.md").write_text("\n".join(lines), encoding="utf-8")
    proverbs = _cuv("Prov")
    text = "\n\n".join(f"第{zh(n)}章\n\n" + "\n\n".join(proverbs[n]) for n in (1, 2, 3))
    (folder / "箴言.txt").write_bytes(text.encode("gbk", errors="replace"))

    async with App(_settings(tmp_path / "data"), embedder=HashEmbedder(DIM), llm=None) as app:
        summary = await Pipeline(app.indexer).ingest_paths([folder])
        assert summary.skipped == [] and summary.documents == 2
        shepherd = await app.scholar.answer(
            ZH.lang, AskRequest("耶和华是我的牧者，我必不致缺乏，这是什么意思？")
        )
        wisdom = await app.scholar.answer(
            ZH.lang, AskRequest("敬畏耶和华是知识的开端，这句话怎么理解？")
        )
    assert {d for d in ("诗篇", "箴言")} == {
        c.label.title for a in (shepherd, wisdom) for c in a.citations
    }
    labels = {c.label.text("zh") for a in (shepherd, wisdom) for c in a.citations}
    assert "诗篇，诗篇第二十三篇" in labels  # the heading whole, though it repeats the title
    assert "箴言，第一章" in labels
    for answer in (shepherd, wisdom):
        for cited in answer.citations:
            place = cited.label.place("zh")
            assert place in {"诗篇第二十二篇", "诗篇第二十三篇", "诗篇第二十四篇"} | {
                "第一章",
                "第二章",
                "第三章",
            }
            assert cited.quote.rstrip("…") in cited.chunk.text


async def test_a_chats_script_setting_reaches_cite_on_the_wire(
    data_dir: Path, telegram_wire: TelegramServer
) -> None:
    """`/settings script 繁体` is the chat's: `/cite` then shows the verse in Traditional, once;
    the per-request option still wins, and another chat keeps Simplified."""
    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        transport = TelegramTransport(
            app.router,
            telegram_settings(telegram_wire),
            edit_interval_s=0.0,
            clock=telegram_wire.clock,
        )
        async with transport:
            for count, (line, chat) in enumerate(
                [
                    ("/settings script 繁体", 42),
                    ("/cite 弗1:10", 42),
                    ("/cite 弗1:10", 43),
                    ("/settings script", 42),
                    ("/settings script 正楷", 42),
                ],
                start=1,
            ):
                telegram_wire.push_command(line, chat_id=chat, user_id=chat)
                await telegram_wire.wait_for("sendMessage", count)
        sent = [str(c.params.get("text", "")) for c in telegram_wire.named("sendMessage")]
    confirmed, traditional, simplified, current, malformed = sent
    assert "繁体" in confirmed
    assert traditional.count("要照所安排的，在日期滿足的時候") == 1
    assert "要照所安排的，在日期满足的时候" not in traditional  # the verse once, not twice
    assert simplified.count("要照所安排的，在日期满足的时候") == 1  # chat 43 chose nothing
    assert "繁体" in current
    assert "简体" in malformed and "繁体" in malformed  # the choices, in the user's language


async def test_an_english_book_is_labelled_and_quoted_true_to_the_file(tmp_path: Path) -> None:
    """The English fixture book (`# The Experience of Life`, `## Chapter N …` headings,
    `(John 1:12-13; 3:6)` references) and a text file whose chapters open with `CHAPTER ONE` /
    `Chapter Two` lines, ingested with no manifest: every citation of an English /ask answer
    names the file's own title (never a chapter heading), the section heading whole, and
    quotes a whole sentence of the passage — a bracketed reference list stays inside it."""
    from retrieval.sentences import split_sentences

    folder = tmp_path / "english"
    folder.mkdir()
    shutil.copy(BOOKS / "the-experience-of-life.md", folder / "the-experience-of-life.md")
    (folder / "walking-by-the-spirit.txt").write_text(
        "CHAPTER ONE\n\n"
        "The Spirit is the Lord Himself reaching us (2 Cor. 3:17-18). To walk by the Spirit "
        "is to let Him lead each step of the day.\n\n"
        "Chapter Two\n\n"
        "A branch abides by staying where it was grafted (cf. John 15:4). The walk by the "
        "Spirit and the abiding in the vine are one experience seen from two sides.\n",
        encoding="utf-8",
    )
    headings = {
        "The Experience of Life": {"Chapter 1 Life Grows", "Chapter 2 Abiding"},
        "walking-by-the-spirit": {"CHAPTER ONE", "Chapter Two"},
    }
    async with App(_settings(tmp_path / "data"), embedder=HashEmbedder(DIM), llm=None) as app:
        summary = await Pipeline(app.indexer).ingest_paths([folder])
        assert summary.skipped == [] and summary.documents == 2
        listed = {d.source: d.type for d in await app.indexer.documents()}
        assert listed == {"The Experience of Life": "book", "walking-by-the-spirit": "book"}
        questions = (
            "How does a branch abide in the vine and bear fruit?",
            "How is a believer born of God and how does this new life grow?",
            "What does it mean to walk by the Spirit?",
        )
        answers = [await app.scholar.answer(EN.lang, AskRequest(q)) for q in questions]
        shown = await _console(app, f"/ask {questions[0]}")
    assert "【The Experience of Life, Chapter 2 Abiding】" in shown
    labels = {c.label.text("en") for a in answers for c in a.citations}
    assert {
        "The Experience of Life, Chapter 2 Abiding",
        "The Experience of Life, Chapter 1 Life Grows",
        "walking-by-the-spirit, CHAPTER ONE",
    } <= labels, labels
    for answer in answers:
        assert answer.addressed and answer.citations and answer.lang == "en"
        for cited in answer.citations:
            label = cited.label
            assert label.title in headings, label
            assert label.place("en") in headings[label.title]  # the heading, whole
            sentences = [s.strip() for s in split_sentences(cited.chunk.text) if s.strip()]
            quote = cited.quote.rstrip("…")
            assert quote in cited.chunk.text
            # a whole sentence (or a run of them): it starts and ends where sentences do
            assert any(quote.startswith(s) for s in sentences), quote
            assert any(quote.endswith(s) for s in sentences) or cited.quote.endswith("…")
            assert not re.fullmatch(r"[\d:：;；,，.。()（）\s–-]+", cited.quote)
            assert not re.search(r"^(?:\d+:\d+|3:6\)|15:4\))", cited.quote)


async def test_discord_carries_the_decline_and_cite(data_dir: Path) -> None:
    """The decline and /cite through SimCord (`DiscordTransport`'s own client), over the real
    App: an unaddressed question is declined (no answer, no sources list), with related
    reading for a near miss and a plain "nothing near" for the weather; `/cite 弗1:10` shows the verse once, its own notes under 注解, and no text twice."""
    async with discord_app(_settings(data_dir, discord_token="simcord")) as (_, server):
        alice = server.member("alice")
        declined = answer_text(
            await alice.slash(server.channel, "ask", question="今天天气怎么样？")
        )
        near = answer_text(
            await alice.slash(server.channel, "ask", question="呼求主名有什么用处？")
        )
        shown = answer_text(await alice.slash(server.channel, "cite", reference="弗1:10"))
    assert "职事语料中没有直接论及「今天天气怎么样」" in declined, declined
    assert NOTHING_NEAR in declined and RELATED not in declined  # off-topic: nothing near
    assert "职事语料中没有直接论及「呼求主名有什么用处」" in near and RELATED in near  # a near miss
    for reply in (declined, near):
        assert "未使用语言模型" not in reply and "**出处**" not in reply  # no sources list

    assert shown.count("要照所安排的，在日期满足的时候") == 1, shown  # the verse once
    assert "和合本（1919）" in shown and "在日期滿足的時候" not in shown  # Simplified
    notes, _, rest = shown.partition("注解")[2].partition("阐述这处经文的职事段落")
    assert "注1" in notes and "神的家务安排" in notes  # the verse's own note text
    assert "要照所安排的" not in notes  # not the verse again
    assert "【以弗所书注解（示例），弗1:10】" in notes
    assert "相关注解" in shown and "弗3:9" in shown  # a note that mentions it, apart
    lines = [ln.strip() for ln in shown.split("\n") if len(ln.strip()) >= 20]
    assert len(lines) == len(set(lines)), [ln for ln in lines if lines.count(ln) > 1]
    assert rest.strip()


async def test_bible_passages_in_an_answer_follow_the_readers_script(
    data_dir: Path, telegram_wire: TelegramServer
) -> None:
    """The CUV is stored in Traditional. A Simplified question's answer quotes a Bible hit in
    Simplified, as /cite shows it; a question written in Traditional, or a chat set to 繁体,
    gets Traditional — the related reading of a declined question too. Ministry passages are
    quoted as they are written."""
    from retrieval.text import is_traditional, to_simplified

    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        simplified = await app.scholar.answer(
            ZH.lang, AskRequest("弗1:10 在日期满足的时候同归于一是什么意思？")
        )
        traditional = await app.scholar.answer(
            ZH.lang, AskRequest("弗1:10 在日期滿足的時候同歸於一是什麼意思？")
        )
        declined = await app.scholar.answer(ZH.lang, AskRequest("弗6:12 我们与什么争战？"))
        transport = TelegramTransport(
            app.router,
            telegram_settings(telegram_wire),
            edit_interval_s=0.0,
            clock=telegram_wire.clock,
        )
        async with transport:
            for count, line in enumerate(
                ["/settings script 繁体", "/ask 弗1:10 在日期满足的时候同归于一是什么意思？"],
                start=1,
            ):
                telegram_wire.push_command(line, chat_id=42, user_id=42)
                await telegram_wire.wait_for("sendMessage", count)
        chat_reply = "\n".join(
            str(c.params.get("text", "")) for c in telegram_wire.named("sendMessage")[1:]
        )

    def bible(answer: Answer) -> list[Cited]:
        return [c for c in (*answer.citations, *answer.related) if c.chunk.type == "bible"]

    assert bible(simplified) and bible(traditional) and bible(declined)
    assert not declined.addressed
    for cited in (*bible(simplified), *bible(declined)):
        assert not is_traditional(cited.quote) and not is_traditional(cited.excerpt)
        assert cited.quote.rstrip("…") in to_simplified(cited.chunk.text)
    assert any(is_traditional(c.quote) for c in bible(traditional))
    assert all(c.quote.rstrip("…") in c.chunk.text for c in bible(traditional))
    shown = re.findall(r"<blockquote>([^<]*)【和合本，[^】]*】</blockquote>", chat_reply)
    assert shown, chat_reply  # the chat's answer quotes a Bible hit, in Traditional
    assert all(is_traditional(text) for text in shown), shown
    ministry = [c for c in simplified.citations if c.chunk.type != "bible"]
    assert all(c.quote.rstrip("…") in c.chunk.text for c in ministry)


async def test_a_footnote_is_quoted_by_its_note_not_by_its_verse(data_dir: Path) -> None:
    """Issue 24, item 7: /ask in the verse's own words finds the verse's footnote (sample
    约翰福音注解, 约14:2); its source line quotes the note, not the verse that opens the chunk."""
    async with App(_settings(data_dir), embedder=HashEmbedder(DIM), llm=None) as app:
        shown = await _console(app, "/ask 在我父的家里有许多住处是什么意思？")
    sources = shown.partition("-- 出处 --")[2]
    line = next(s for s in sources.splitlines() if s.startswith("【约翰福音注解（示例），约14:2】"))
    assert "“父的家”在约翰福音里不是指天上的建筑" in line, line
    assert "在我父的家里有许多住处" not in line, line
