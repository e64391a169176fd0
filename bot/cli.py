"""`baibao run | chat | ask | cite | search | ingest | log`."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from bot.settings import Settings, SettingsError, load_settings, parse_ids
from retrieval.store import DimensionMismatch, StoreError

if TYPE_CHECKING:
    from bot.actor import Actor
    from bot.app import App, Startup


# The commands that answer once and exit: their help, and the name their words are parsed into.
_ONE_SHOT = {
    "ask": ("answer one question and exit", "question"),
    "cite": ("look up one scripture reference and exit", "reference"),
    "search": ("show fused hits with each track's rank and score", "query"),
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="baibao", description="百宝箱 Baibao bot")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("run", help="start every transport that has a token (Discord, Telegram)")
    sub.add_parser("chat", help="the console transport (no tokens needed)")
    one_shot: dict[str, argparse.ArgumentParser] = {}
    for name, (help_text, words) in _ONE_SHOT.items():
        one_shot[name] = sub.add_parser(name, help=help_text)
        one_shot[name].add_argument(words, nargs="+")
    one_shot["ask"].add_argument(
        "--json",
        action="store_true",
        help="print {question, mode, addressed, answer, citations, related, graph_paths} as JSON",
    )
    search = one_shot["search"]
    search.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="source/type/era/language filter, repeatable (e.g. --filter type=outline)",
    )
    search.add_argument("--limit", type=int, default=7)
    search.add_argument("--json", action="store_true", help="machine-readable output")
    search.add_argument(
        "--chat",
        metavar="PLATFORM:ID",
        help="read as that chat reads: the shared library plus its shelf "
        "(e.g. telegram:-1001234); default: the shared library alone",
    )
    changes = sub.add_parser("log", help="the change log: who changed what, where and when")
    changes.add_argument("--chat", metavar="PLATFORM:ID", help="only that chat's entries")
    changes.add_argument("--limit", type=int, default=50)
    ingest = sub.add_parser("ingest", help="ingest files or folders into the corpus")
    from ingest.cli import add_ingest_arguments

    add_ingest_arguments(ingest)
    graph = sub.add_parser("graph", help="knowledge-graph tools")
    graph_sub = graph.add_subparsers(dest="graph_cmd", required=True)
    extract = graph_sub.add_parser(
        "extract",
        help="extract typed entities and relations with the configured language model "
        "(optional; cached, resumable; shows the token cost before and after)",
    )
    extract.add_argument("--source", help="only this document (title or id)")
    extract.add_argument(
        "--dry-run", action="store_true", help="only estimate the cost; send nothing"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as err:
        print(err, file=sys.stderr)
        return 2
    from bot.logs import configure_logging, console_log

    # The console's replies and its log share no terminal: its log goes to a file.
    to_file = console_log(settings.data_dir) if args.cmd == "chat" else None
    configure_logging(settings.log_level, settings.secrets(), to_file=to_file)
    from bot.lock import DataDirBusy

    try:
        return asyncio.run(_main(args, settings))
    except KeyboardInterrupt:
        return 130
    except DataDirBusy as err:
        print(err, file=sys.stderr)
        return 3
    except StoreError as err:  # the store failed to open, or to flush as it closed
        print(_store_failure(err), file=sys.stderr)
        return 4


def _store_failure(err: StoreError) -> str:
    """What a user is told when the vector store cannot be opened or closed."""
    if isinstance(err, DimensionMismatch):
        return (
            f"向量库按 {err.stored} 维向量建成，而现在的向量模型（EMBEDDING_PROVIDER）产生 "
            f"{err.requested} 维向量。请换回建库时的模型，或删除数据目录中的 qdrant 文件夹后"
            f"重新导入。 / The {err}."
        )
    return f"向量库出错 / The vector store failed: {err}"


async def _main(args: argparse.Namespace, settings: Settings) -> int:
    from bot.app import App

    if args.cmd == "run" and settings.discord_token is None and settings.telegram_token is None:
        print(
            "没有配置 DISCORD_TOKEN 或 TELEGRAM_TOKEN；本地试用请运行 `baibao chat`。\n"
            "No DISCORD_TOKEN or TELEGRAM_TOKEN set; try `baibao chat` locally.",
            file=sys.stderr,
        )
        return 2
    async with App(settings, startup=startup_for(args)) as app:
        if args.cmd == "ingest":
            from ingest.cli import run_ingest

            if args.bible_books is None and (args.paths or args.ocr_files):
                args.bible_books = settings.demo_bible_books
            return await run_ingest(
                app.indexer, args, _recorder(app), read_process=settings.ingest_read_process
            )
        if args.cmd == "log":
            return await _log(app, args)
        if settings.sample_corpus:
            await _prepare(app)
        if args.cmd in ("ask", "cite"):
            return await _one_shot(app, args)
        if args.cmd == "search":
            return await _search(app, args)
        if args.cmd == "graph":
            return await _graph_extract(app, args)
        if args.cmd == "chat":
            from bot.transports.console import ConsoleTransport

            console = ConsoleTransport(app.router, lang=settings.default_language)
            async with console:
                app.serving()  # warm what English questions read, now that it answers
                await console.serve()
            return 0
        return await _run(app, settings)


def startup_for(args: argparse.Namespace) -> Startup:
    """What `args`'s command needs started up front: the bot everything; a one-shot command
    the models it will use (none to list or delete), and a lookup its store in this process."""
    from bot.app import FULL, LOOKUP, QUERY, RECORDS

    if args.cmd in ("ask", "search"):
        return QUERY
    if args.cmd == "cite":
        return LOOKUP
    if args.cmd in ("graph", "log") or (
        args.cmd == "ingest" and (args.list or args.delete or args.trash or args.restore)
    ):
        return RECORDS
    return FULL  # run, chat, ingest PATH


async def _prepare(app: App) -> None:
    """First run: the bundled sample corpus, with a progress line on stderr."""
    from ingest.cli import ProgressBar

    bar = ProgressBar("首次运行·准备示例语料")
    ran = await app.prepare_samples(on_progress=bar)
    if ran:
        bar.finish()


async def _one_shot(app: App, args: argparse.Namespace) -> int:
    from bot.actor import Actor
    from bot.render.console import render
    from bot.router import Invocation, Line

    actor = Actor(
        "console",
        "console",
        "cli",
        "cli",
        is_admin=True,
        lang=app.settings.default_language,
        kind="console",
    )
    words = " ".join(args.question if args.cmd == "ask" else args.reference)
    if args.cmd == "ask" and args.json:
        return await _ask_json(app, actor, words)
    reply = await app.router.answer(Invocation(actor, Line(f"/{args.cmd} {words}")))
    if reply is None:
        return 1
    print(render(reply, reply.lang))
    return 1 if reply.is_error else 0


async def _ask_json(app: App, actor: Actor, words: str) -> int:
    """`baibao ask --json`: the structured answer, for integrations and evaluation. The words
    go through the /ask command's own parsing (length limit, filters, types), so bad input
    gets the same usage message as in a chat (on stderr, exit status 2)."""
    from bot.presenters.answer import answer_reply
    from bot.presenters.scholar import filter_error
    from bot.render.console import render
    from bot.reply import Reply
    from retrieval.requests import AskRequest
    from retrieval.scholar import UnknownFilter

    parsed = await app.router.parse_text(actor, f"/ask {words}")
    if isinstance(parsed, Reply):
        print(render(parsed, parsed.lang), file=sys.stderr)
        return 2
    actor, request = parsed
    if not isinstance(request, AskRequest):  # the registry's /ask always parses to one
        raise TypeError(f"/ask parsed to {type(request).__name__}")
    try:
        request = await app.scholar.resolve_filters(request)
    except UnknownFilter as err:
        print(filter_error(err, actor.lang), file=sys.stderr)
        return 2
    answer = await app.scholar.answer(actor.lang, request)
    shown = "\n\n".join(b.text for b in answer_reply(answer).blocks)
    print(json.dumps(answer.as_json(shown), ensure_ascii=False, indent=2))
    return 0


def _recorder(app: App) -> Callable[[str, str], Awaitable[None]]:
    """How the CLI logs a change it makes: as the operator at the console."""
    from bot.changes import Change

    async def record(what: str, outcome: str) -> None:
        stamp = app.changes.stamp()
        await app.changes.record(
            Change(stamp, "console", "cli", "cli", "console:cli", "", what, outcome)
        )

    return record


async def _log(app: App, args: argparse.Namespace) -> int:
    """`baibao log`: the latest entries first."""
    entries = await app.changes.entries(args.chat, limit=max(1, min(args.limit, 10_000)))
    if not entries:
        print("还没有任何修改记录。/ No changes logged yet.")
    for e in entries:
        who = f"{e.user_name or e.user_id} ({e.platform}:{e.user_id})"
        print(f"{e.at}  {who}  {e.chat}  {e.what}  → {e.outcome}")
    return 0


async def _search(app: App, args: argparse.Namespace) -> int:
    from retrieval.library import shelf_namespace
    from retrieval.types import Filter

    equals: dict[str, str] = {}
    for item in args.filter:
        key, sep, value = item.partition("=")
        if not sep or key not in ("source", "type", "era", "language"):
            print(
                f"无效的过滤条件 / invalid filter: {item!r} (source|type|era|language=VALUE)",
                file=sys.stderr,
            )
            return 2
        equals[key] = value
    query = " ".join(args.query)
    try:
        chats = sorted(parse_ids(args.chat or ""))
    except ValueError as err:
        print(f"无效的 --chat / invalid --chat: {err}", file=sys.stderr)
        return 2
    reading = app.indexer.reading(shelf_namespace(chats[0]) if chats else "")
    result = await app.search.search(
        query,
        flt=Filter(equals=equals) if equals else None,
        limit=max(1, min(args.limit, 50)),
        reading=reading,
    )
    rows: list[dict[str, Any]] = [
        {
            "rank": i + 1,
            "score": round(hit.score, 5),
            "tracks": {
                t: {"rank": hit.ranks[t], "score": round(hit.track_scores.get(t, 0.0), 5)}
                for t in hit.ranks
            },
            "source": hit.chunk.source,
            "chapter": hit.chunk.chapter,
            "type": hit.chunk.type,
            "scripture_refs": list(hit.chunk.scripture_refs)[:10],
            "text": hit.chunk.text[:200],
            "id": hit.chunk.id,
        }
        for i, hit in enumerate(result.hits)
    ]
    if args.json:
        print(
            json.dumps(
                {
                    "query": query,
                    "hits": rows,
                    "graph_paths": [p.to_json() for p in result.graph_paths],
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return 0
    for row in rows:
        tracks = "  ".join(f"{t}#{v['rank']}({v['score']})" for t, v in row["tracks"].items())
        print(f"{row['rank']}. [{row['score']}] {row['source']} · {row['chapter']}  {tracks}")
        print(f"   {row['text'][:120]}")
    for path in result.graph_paths[:3]:
        print("graph: " + path.render())
    if not rows:
        print("（没有结果 / no results）")
    return 0


async def _graph_extract(app: App, args: argparse.Namespace) -> int:
    from retrieval.graph.extract_llm import LLMExtractor
    from retrieval.types import CORPUS_NAMESPACE, Filter

    if app.llm is None:
        print(
            "没有配置语言模型（LLM_PROVIDER 与密钥）；离线生长的图谱不需要它。\n"
            "No language model configured (LLM_PROVIDER and a key); the offline graph needs none.",
            file=sys.stderr,
        )
        return 2
    docs = [d for d in await app.indexer.documents() if d.type != "bible"]
    if args.source:
        docs = [d for d in docs if args.source in (d.doc_id, d.source)]
        if not docs:
            print(f"没有这份文档 / no such document: {args.source}", file=sys.stderr)
            return 2
    model = app.settings.llm_model or app.settings.resolved_llm_provider
    extractor = LLMExtractor(app.llm, app.graph.answer_cache(), model)
    plans = []
    for d in docs:
        chunks = await app.store.scroll(
            Filter(equals={"namespace": CORPUS_NAMESPACE, "doc_id": d.doc_id}), limit=100_000
        )
        plans.append((d, await extractor.plan(sorted(chunks, key=lambda c: c.position))))
    batches = sum(len(p.batches) for _, p in plans)
    send = sum(len(p.to_send) for _, p in plans)
    print(
        f"预计 / estimated: {len(plans)} documents, {batches} batches, {send} to send "
        f"({batches - send} cached), ≈{sum(p.estimated_tokens for _, p in plans):,} tokens"
    )
    if args.dry_run:
        return 0
    sent = tokens_in = tokens_out = entities = relations = 0
    for d, plan in plans:
        extraction, report = await extractor.run(plan)
        await app.graph.add_extraction(d.doc_id, d.source, extraction)
        sent += report.sent
        tokens_in += report.input_tokens
        tokens_out += report.output_tokens
        entities += report.entities
        relations += report.relations
        print(f"  {d.source}: {report.entities} entities, {report.relations} relations")
    print(
        f"实际 / actual: {sent} batches sent, {tokens_in:,} input + {tokens_out:,} output "
        f"tokens; {entities} entities, {relations} relations"
    )
    return 0


async def _run(app: App, settings: Settings) -> int:
    from bot.transports.base import ChatTransport

    transports: list[ChatTransport[Any]] = []
    if settings.discord_token is not None:
        from bot.transports.discord import DiscordTransport

        transports.append(DiscordTransport(app.router, settings))
    if settings.telegram_token is not None:
        from bot.transports.telegram import TelegramTransport

        transports.append(TelegramTransport(app.router, settings))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    started: list[ChatTransport[Any]] = []
    try:
        for transport in transports:
            await transport.start()
            started.append(transport)
        app.serving()  # warm what English questions read, now that the bot answers
        await stop.wait()
    finally:
        for transport in reversed(started):
            await transport.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
