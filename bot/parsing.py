"""Text form → raw arguments → validated values, by a command's parameters. Pure functions."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from bot.registry import Command, Param, UsageError

RawArgs = Mapping[str, str | int | None]

SLASHES = ("/", "／")


def clean(text: str) -> str:
    """Drop control characters (keeping newlines and tabs); the user's punctuation stays."""
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C")


def split_text_command(line: str, bot_username: str = "") -> tuple[str, str] | None:
    """`/ask@bot question` → ("ask", "question"); None when the line is not a command."""
    line = line.strip()
    if not line.startswith(SLASHES):
        return None
    head, _, rest = line[1:].partition(" ")
    if "\n" in head:
        head, _, more = head.partition("\n")
        rest = more + (" " + rest if rest else "")
    name, _, target = head.partition("@")
    if target and bot_username and target.lower() != bot_username.lower():
        return None  # addressed to another bot in the group
    return name.lower(), rest.strip()


def addressed(line: str) -> bool:
    """`/ask@bot …`: the command names a bot (ours, once `split_text_command` accepted it)."""
    head = line.strip()[1:].split(maxsplit=1)
    return bool(head) and "@" in head[0]


def first_word(rest: str) -> tuple[str, str]:
    """("next", "the rest") — the subcommand word normalised (full width, case)."""
    word, _, rest = rest.strip().partition(" ")
    return unicodedata.normalize("NFKC", clean(word)).strip().lower(), rest


def parse_args(command: Command[Any], rest: str) -> dict[str, str]:
    """Text form → raw argument strings, by the command's params."""
    rest = rest.strip()
    args: dict[str, str] = {}
    text_params = [p for p in command.params if p.kind != "file"]
    if command.pipe_split:
        parts = [p.strip() for p in rest.replace("｜", "|").split("|")] if rest else []
        for param, part in zip(text_params, parts, strict=False):
            args[param.name] = part
        if len(parts) > len(text_params):  # extra pipes belong to the last field
            args[text_params[-1].name] = " | ".join(parts[len(text_params) - 1 :])
        return args
    for param in text_params:
        if not rest:
            break
        if param.rest:
            args[param.name] = rest
            rest = ""
        else:
            token, _, rest = rest.partition(" ")
            args[param.name] = token
            rest = rest.strip()
    if rest and text_params:  # leftover words join the last text parameter
        last = text_params[-1]
        args[last.name] = f"{args.get(last.name, '')} {rest}".strip()
    return args


def validate(command: Command[Any], raw: RawArgs, *, has_file: bool) -> dict[str, str | int]:
    """Each parameter checked on its own (presence, type, length, choice). A file parameter
    only needs `has_file`: its bytes are read after the command is accepted."""
    out: dict[str, str | int] = {}
    for param in command.params:
        if param.kind == "file":
            _check_file(param, has_file)
            continue
        value = raw.get(param.name)
        if isinstance(value, str):
            value = clean(value).strip() or None
        if value is None:
            if param.required:
                raise UsageError("missing_arg", param=param)
            continue
        out[param.name] = _CHECKS.get(param.kind, _checked_text)(param, str(value))
    return out


def _check_file(param: Param, has_file: bool) -> None:
    if param.required and not has_file:
        if param.extensions:
            raise UsageError("need_upload", formats=param.formats())
        raise UsageError("need_file")


def _checked_int(param: Param, value: str) -> int:
    try:
        number = int(unicodedata.normalize("NFKC", value))
    except ValueError:
        raise UsageError("not_int", param=param, value=value[:20]) from None
    if number < 1 or number > 1_000_000:
        raise UsageError("not_int", param=param, value=value[:20])
    return number


def _checked_choice(param: Param, value: str) -> str:
    text = unicodedata.normalize("NFKC", value).lower()
    if text not in param.choices:
        raise UsageError("bad_choice", param=param, choices=" / ".join(param.choices))
    return text


def _checked_text(param: Param, value: str) -> str:
    if len(value) > param.max_len:
        raise UsageError("too_long", param=param, n=len(value), limit=param.max_len)
    return value


# A parameter kind → its check; any other kind (text) is checked by length.
_CHECKS: dict[str, Callable[[Param, str], str | int]] = {
    "int": _checked_int,
    "choice": _checked_choice,
}
