"""`baibao run | chat | ask | cite | search | ingest`."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence

from bot.settings import Settings, SettingsError, load_settings


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="baibao", description="百宝箱 Baibao bot")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("run", help="start every transport that has a token (Discord, Telegram)")
    sub.add_parser("chat", help="the console transport (no tokens needed)")
    ask = sub.add_parser("ask", help="answer one question and exit")
    ask.add_argument("question", nargs="+")
    cite = sub.add_parser("cite", help="look up one scripture reference and exit")
    cite.add_argument("reference", nargs="+")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as err:
        print(err, file=sys.stderr)
        return 2
    from bot.logs import configure_logging

    configure_logging(settings.log_level, settings.secrets())
    from bot.lock import DataDirBusy

    try:
        return asyncio.run(_main(args, settings))
    except KeyboardInterrupt:
        return 130
    except DataDirBusy as err:
        print(err, file=sys.stderr)
        return 3


async def _main(args: argparse.Namespace, settings: Settings) -> int:
    from bot.app import App
    from bot.render.console import render
    from retrieval.requests import Actor

    async with App(settings) as app:
        actor = Actor(
            "console", "console", "cli", "cli", is_admin=True, lang=settings.default_language
        )
        if args.cmd in ("ask", "cite"):
            words = " ".join(args.question if args.cmd == "ask" else args.reference)
            reply = await app.router.handle_text(actor, f"/{args.cmd} {words}")
            if reply is None:
                return 1
            print(render(reply, reply.lang))
            return 1 if reply.is_error else 0
        if args.cmd == "chat":
            from bot.transports.console import ConsoleTransport

            console = ConsoleTransport(app.router, lang=settings.default_language)
            async with console:
                await console.serve()
            return 0
        return await _run(app, settings)


async def _run(app: object, settings: Settings) -> int:
    from bot.app import App

    assert isinstance(app, App)
    transports = []
    if settings.discord_token is not None:
        from bot.transports.discord import DiscordTransport

        transports.append(DiscordTransport(app.router, settings))
    if settings.telegram_token is not None:
        from bot.transports.telegram import TelegramTransport

        transports.append(TelegramTransport(app.router, settings))
    if not transports:
        print(
            "没有配置 DISCORD_TOKEN 或 TELEGRAM_TOKEN；本地试用请运行 `baibao chat`。\n"
            "No DISCORD_TOKEN or TELEGRAM_TOKEN set; try `baibao chat` locally.",
            file=sys.stderr,
        )
        return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    started = []
    try:
        for transport in transports:
            await transport.start()
            started.append(transport)
        await stop.wait()
    finally:
        for transport in reversed(started):
            await transport.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
