"""Reply → plain terminal text."""

from __future__ import annotations

from bot.reply import Reply
from kernel.i18n import Lang

_SOURCES = {"zh": "出处", "en": "Sources"}
_CHOOSE = {"zh": "（输入 /press 编号 选择）", "en": "(type /press N to choose)"}


def render(reply: Reply, lang: Lang = "zh") -> str:
    out: list[str] = []
    for block in reply.blocks:
        if block.kind == "heading":
            out.append(f"== {block.text} ==")
        elif block.kind == "quote":
            out.append("\n".join(f"> {line}" for line in block.text.splitlines()))
        elif block.kind == "item":
            out.append("• " + block.text.replace("\n", "\n  "))
        elif block.kind == "note":
            out.append(_note(block.text, lang))
        else:
            out.append(block.text)
    if reply.citations:
        out.append(f"-- {_SOURCES[lang]} --")
        for c in reply.citations:
            out.append(f"【{c.label}】{c.quote}" if c.quote else f"【{c.label}】")
    choices: list[str] = []
    if reply.poll:
        out.append(reply.poll.question)
        choices = list(reply.poll.labels)
    choices += [b.label for b in reply.buttons]
    if choices:
        out.extend(f"  [{i + 1}] {label}" for i, label in enumerate(choices))
        out.append(_CHOOSE[lang])
    for att in reply.attachments:
        out.append(f"📎 {att.filename} ({len(att.data)} bytes)")
    return "\n\n".join(out)


def _note(text: str, lang: Lang) -> str:
    """A note in brackets, unless it is bracketed already (「（第 1 版）」 stays as it is)."""
    stripped = text.strip()
    if (stripped[:1], stripped[-1:]) in (("（", "）"), ("(", ")")) and _balanced(stripped):
        return stripped
    return f"（{text}）" if lang == "zh" else f"({text})"


def _balanced(text: str) -> bool:
    """The first bracket closes at the end: 「（甲）乙（丙）」 is two, not one bracketed."""
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "（("
        depth -= ch in "）)"
        if depth == 0 and i < len(text) - 1:
            return False
    return depth == 0


def actions(reply: Reply) -> list[str]:
    """The actions behind the numbered choices `render` printed, in the same order."""
    acts: list[str] = []
    if reply.poll:  # each option's action as the ballot room encoded it
        acts += [o.action for o in reply.poll.options]
    acts += [b.action for b in reply.buttons]
    return acts
