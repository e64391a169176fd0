"""`/help`: written from the registry, so it lists exactly the commands that exist."""

from __future__ import annotations

from bot.i18n import T
from bot.registry import Call, Command, Group, Help, Param, Registry
from retrieval.reply import Block, Reply


def help_reply(registry: Registry, call: Call, topic: str) -> Reply:
    lang = call.actor.lang
    if topic:
        entry = registry.get(topic.lstrip("/／").lower())
        if entry is None:
            return Reply.error(T(lang, "unknown_command", name=topic[:40]), lang=lang)
        blocks = [
            Block(f"/{entry.name} — {entry.help.describe(lang)}", "heading"),
            Block(T(lang, "usage", usage=entry.help.usage), "code"),
        ]
        if isinstance(entry, Group):
            blocks += [
                Block(f"{c.name} — {c.help.describe(lang)}\n{c.help.usage}", "item")
                for c in entry.children
            ]
        return Reply(blocks=tuple(blocks), lang=lang)
    blocks = [Block(T(lang, "help_header"), "heading")]
    blocks += [
        Block(f"/{e.name} — {e.help.describe(lang)}\n{e.help.usage}", "item") for e in registry
    ]
    blocks.append(Block(T(lang, "help_footer"), "note"))
    return Reply(blocks=tuple(blocks), lang=lang)


def help_command(registry: Registry) -> Command[str]:
    async def run(call: Call, topic: str) -> Reply:
        return help_reply(registry, call, topic)

    return Command(
        help=Help("help", "显示帮助", "Show help", "/help [命令]"),
        params=(Param("command", "命令", "command", required=False, max_len=50),),
        parse=lambda v: v.text("command"),
        run=run,
        rate_limited=False,
    )
