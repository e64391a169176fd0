"""`/start` and `/help`: written from the registry, so it lists exactly the commands that exist."""

from __future__ import annotations

from bot.i18n import T
from bot.registry import Call, Command, Group, Help, Param, Registry
from bot.reply import Block, Reply


def start_reply(registry: Registry, call: Call) -> Reply:
    """A first contact (Telegram's Start button, `/start` in a group): who the bot is, then
    the command list."""
    lang = call.actor.lang
    listing = help_reply(registry, call, "")
    return Reply(blocks=(Block(T(lang, "welcome")), *listing.blocks), lang=lang)


def help_reply(registry: Registry, call: Call, topic: str) -> Reply:
    lang = call.actor.lang
    if topic:
        entry = registry.get(topic.lstrip("/／").lower())
        if entry is None:
            return Reply.error(T(lang, "unknown_command", name=topic[:40]), lang=lang)
        blocks = [
            Block(f"/{entry.name} — {entry.help.describe(lang)}", "heading"),
            Block(T(lang, "usage", usage=entry.help.usage_in(lang)), "code"),
        ]
        if isinstance(entry, Group):
            blocks += [
                Block(f"{c.name} — {c.help.describe(lang)}\n{c.help.usage_in(lang)}", "item")
                for c in entry.children
            ]
        return Reply(blocks=tuple(blocks), lang=lang)
    blocks = [Block(T(lang, "help_header"), "heading")]
    blocks += [
        Block(f"/{e.name} — {e.help.describe(lang)}\n{e.help.usage_in(lang)}", "item")
        for e in registry
    ]
    blocks.append(Block(T(lang, "help_footer"), "note"))
    return Reply(blocks=tuple(blocks), lang=lang)


def start_command(registry: Registry) -> Command[None]:
    async def run(call: Call, _: None) -> Reply:
        return start_reply(registry, call)

    return Command(
        help=Help(
            "start",
            "开始使用：介绍与命令列表",
            "Get started: what I do, and the commands",
            "/start",
        ),
        parse=lambda v: None,
        run=run,
        rate_limited=False,
    )


def help_command(registry: Registry) -> Command[str]:
    async def run(call: Call, topic: str) -> Reply:
        return help_reply(registry, call, topic)

    return Command(
        help=Help("help", "显示帮助", "Show help", "/help [命令]", "/help [command]"),
        params=(Param("command", "命令", "command", required=False, max_len=50),),
        parse=lambda v: v.text("command"),
        run=run,
        rate_limited=False,
    )
