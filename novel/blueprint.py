"""L1 world blueprint: a pydantic schema, parsing of uploads, dotted-path edits, rendering.

Errors are `BlueprintError(zh, en)`: one message naming the field and the problem.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kernel.i18n import Lang


class BlueprintError(ValueError):
    def __init__(self, zh: str, en: str) -> None:
        super().__init__(zh)
        self.zh = zh
        self.en = en

    def text(self, lang: Lang) -> str:
        return self.en if lang == "en" else self.zh


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class Character(_Model):
    name: str = Field(min_length=1, max_length=40)
    aliases: list[str] = Field(default_factory=list)
    traits: list[str] = Field(default_factory=list)
    relationships: dict[str, str] = Field(default_factory=dict)
    status: str = Field(default="存活", min_length=1, max_length=40)  # alive / dead / missing …
    location: str = Field(default="", max_length=100)
    description: str = Field(default="", max_length=2000)


class Faction(_Model):
    name: str = Field(min_length=1, max_length=60)
    description: str = Field(default="", max_length=2000)
    members: list[str] = Field(default_factory=list)


class Blueprint(_Model):
    title: str = Field(min_length=1, max_length=100)
    setting: str = Field(default="", max_length=5000)  # the world
    places: list[str] = Field(default_factory=list)  # named places (scenes, consistency)
    rules: list[str] = Field(default_factory=list)
    factions: list[Faction] = Field(default_factory=list)
    characters: list[Character] = Field(default_factory=list)
    style: str = Field(default="", max_length=2000)

    @field_validator("characters")
    @classmethod
    def _unique_names(cls, value: list[Character]) -> list[Character]:
        seen: set[str] = set()
        for c in value:
            for n in (c.name, *c.aliases):
                if n in seen:
                    raise ValueError(f"duplicate_name:{n}")
                seen.add(n)
        return value

    @model_validator(mode="after")
    def _faction_names(self) -> Blueprint:
        names = [f.name for f in self.factions]
        if len(names) != len(set(names)):
            raise ValueError("duplicate_faction")
        return self

    def character(self, name: str) -> Character | None:
        for c in self.characters:
            if name == c.name or name in c.aliases:
                return c
        return None

    def name_index(self) -> dict[str, str]:
        """Every name and alias → the canonical name (longest first matters to callers)."""
        index: dict[str, str] = {}
        for c in self.characters:
            index[c.name] = c.name
            for a in c.aliases:
                if a:
                    index[a] = c.name
        return index

    def characters_in(self, text: str) -> list[str]:
        """Canonical names of the characters `text` mentions by name or alias, in blueprint order."""
        found = {canon for n, canon in self.name_index().items() if n and n in text}
        return [c.name for c in self.characters if c.name in found]

    def to_json(self) -> str:
        return json.dumps(self.model_dump(), ensure_ascii=False, indent=2)


def default_blueprint() -> Blueprint:
    """A small world so a new novel can start at once (the demo)."""
    return Blueprint(
        title="青岚渡",
        setting=(
            "架空的江南水乡古国“澜州”。大河青岚江贯穿全境，渡口星罗棋布；"
            "朝廷衰微，江湖门派与漕帮各据一方。传说江底沉着一座能改变水势的古钟。"
        ),
        places=["青岚渡", "青岚江", "江心岛", "听潮阁", "漕帮总舵"],
        rules=[
            "没有夸张的法术；武艺是长年苦练的结果，受伤会留下后果。",
            "青岚江每逢月圆涨潮，夜里渡河极其危险。",
            "人物已死亡不可复活。",
        ],
        factions=[
            Faction(
                name="听潮阁", description="隐居江心岛的学派，守护古钟的秘密。", members=["沈默"]
            ),
            Faction(name="漕帮", description="控制青岚江水运的帮会，势力庞大。", members=["霍三"]),
        ],
        characters=[
            Character(
                name="林远",
                aliases=["阿远"],
                traits=["沉稳", "执着", "不善言辞"],
                relationships={"沈默": "师父", "苏晴": "同伴"},
                location="青岚渡",
                description="渡口船家之子，自幼随师父习武，师父失踪后踏上寻师之路。",
            ),
            Character(
                name="苏晴",
                aliases=["晴儿"],
                traits=["机敏", "好奇", "嘴硬心软"],
                relationships={"林远": "同伴"},
                location="青岚渡",
                description="游方郎中之女，通晓药理与水文。",
            ),
            Character(
                name="沈默",
                aliases=["沈师父"],
                traits=["寡言", "深谋"],
                relationships={"林远": "徒弟"},
                status="失踪",
                location="不明",
                description="听潮阁旧人，三个月前夜渡青岚江后下落不明。",
            ),
            Character(
                name="霍三",
                traits=["精明", "狠辣"],
                relationships={"沈默": "旧怨"},
                location="漕帮总舵",
                description="漕帮二当家，也在找那口古钟。",
            ),
        ],
        style="第三人称有限视角，简洁白描，重环境与动作，少用形容词堆砌；对白口语化。",
    )


# ---- errors in the user's language ----------------------------------------------------------

_TYPE_ZH: dict[str, tuple[str, str]] = {
    "missing": ("缺少必填字段", "is required"),
    "string_type": ("应为文字", "must be text"),
    "string_too_short": ("不能为空", "must not be empty"),
    "string_too_long": ("内容过长", "is too long"),
    "list_type": ("应为列表", "must be a list"),
    "dict_type": ("应为对象（键值对）", "must be an object"),
    "model_type": ("应为对象（键值对）", "must be an object"),
    "model_attributes_type": ("应为对象（键值对）", "must be an object"),
    "extra_forbidden": ("不是可识别的字段", "is not a known field"),
    "int_type": ("应为整数", "must be an integer"),
    "int_parsing": ("应为整数", "must be an integer"),
    "bool_type": ("应为是/否", "must be true or false"),
    "too_short": ("项目太少", "has too few items"),
    "too_long": ("项目太多", "has too many items"),
}


def _field_name(blueprint_data: Any, loc: Iterable[str | int]) -> str:
    """Render a pydantic location; list items of characters / factions by their name."""
    parts: list[str] = []
    node: Any = blueprint_data
    for p in loc:
        if isinstance(p, int) and isinstance(node, list):
            item = node[p] if 0 <= p < len(node) else None
            label = item.get("name") if isinstance(item, dict) else None
            parts.append(str(label) if isinstance(label, str) and label else f"[{p + 1}]")
            node = item
        else:
            parts.append(str(p))
            node = node.get(p) if isinstance(node, dict) else None
    return ".".join(parts) or "(根)"


def _translate(err: ValidationError, data: Any) -> BlueprintError:
    first = err.errors()[0]
    loc = _field_name(data, first["loc"])
    kind = first["type"]
    msg = str(first.get("msg", ""))
    if "duplicate_name:" in msg:
        name = msg.split("duplicate_name:", 1)[1]
        return BlueprintError(
            f"蓝图字段 {loc}：角色名或别名“{name}”重复",
            f"blueprint field {loc}: name “{name}” is duplicated",
        )
    if "duplicate_faction" in msg:
        return BlueprintError(
            "蓝图字段 factions：势力名称重复", "blueprint field factions: duplicate faction name"
        )
    zh, en = _TYPE_ZH.get(kind, ("取值无效", "is invalid"))
    return BlueprintError(f"蓝图字段 {loc}：{zh}", f"blueprint field {loc}: {en}")


def validate(data: Any) -> Blueprint:
    if not isinstance(data, dict):
        raise BlueprintError(
            "蓝图必须是一个 JSON 对象（以 { 开头）", "the blueprint must be a JSON object ({ … })"
        )
    try:
        return Blueprint.model_validate(data)
    except ValidationError as err:
        raise _translate(err, data) from None


def parse_upload(data: bytes, max_bytes: int) -> Blueprint:
    """An uploaded JSON file → a validated blueprint, or one clear BlueprintError."""
    if not data.strip():
        raise BlueprintError("上传的文件是空的", "the uploaded file is empty")
    if len(data) > max_bytes:
        raise BlueprintError(
            f"文件过大（{len(data) // 1024} KB），蓝图上限为 {max_bytes // 1024} KB",
            f"file too large ({len(data) // 1024} KB); the limit is {max_bytes // 1024} KB",
        )
    try:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            text = data.decode("utf-16")
        elif b"\x00" in data:  # UTF-16/32 without a byte-order mark
            raise UnicodeDecodeError("utf-8", data, 0, 1, "NUL byte")
        else:
            text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BlueprintError(
            "文件不是 UTF-8 编码，请另存为 UTF-8 后重新上传",
            "the file is not UTF-8 encoded; save it as UTF-8 and upload again",
        ) from None
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as err:
        raise BlueprintError(
            f"JSON 格式错误：第 {err.lineno} 行第 {err.colno} 列（{err.msg}）",
            f"malformed JSON at line {err.lineno}, column {err.colno} ({err.msg})",
        ) from None
    return validate(parsed)


def _parse_value(raw: str, current: Any) -> Any:
    raw = raw.strip()
    if isinstance(current, list):
        if raw.startswith("["):
            try:
                return json.loads(raw)
            except json.JSONDecodeError:
                pass
        import re

        return [p.strip() for p in re.split(r"[,，、;；]", raw) if p.strip()]
    if isinstance(current, dict) or raw.startswith("{"):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def edit(bp: Blueprint, path: str, value: str) -> Blueprint:
    """Set one field by dotted path; characters and factions are addressed by name (or alias).

    `characters.林远.status 已死亡` · `setting …` · `rules 甲，乙` · `characters.林远.relationships.苏晴 恋人`.
    The result is validated as a whole; nothing changes on error.
    """
    parts = [p for p in path.strip().split(".") if p]
    if not parts:
        raise BlueprintError(
            "请给出要修改的字段，例如 characters.林远.status",
            "name a field, e.g. characters.林远.status",
        )
    data: dict[str, Any] = bp.model_dump()
    node: Any = data
    walked: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        here = ".".join([*walked, part])
        if isinstance(node, list):
            match = next(
                (
                    item
                    for item in node
                    if isinstance(item, dict)
                    and (item.get("name") == part or part in (item.get("aliases") or []))
                ),
                None,
            )
            if match is None:
                raise BlueprintError(
                    f"蓝图字段 {'.'.join(walked)} 中没有名为“{part}”的条目",
                    f"blueprint field {'.'.join(walked)} has no entry named “{part}”",
                )
            if last:
                raise BlueprintError(
                    f"蓝图字段 {here} 是一个条目，请指定它的字段，例如 {here}.status",
                    f"{here} is an entry; name one of its fields, e.g. {here}.status",
                )
            node = match
        elif isinstance(node, dict):
            is_free_map = walked and walked[-1] == "relationships"
            if part not in node and not is_free_map:
                raise BlueprintError(
                    f"蓝图字段 {here}：不是可识别的字段",
                    f"blueprint field {here}: is not a known field",
                )
            if last:
                node[part] = _parse_value(value, node.get(part))
            else:
                node = node[part]
        else:
            raise BlueprintError(
                f"蓝图字段 {'.'.join(walked)} 没有子字段",
                f"blueprint field {'.'.join(walked)} has no sub-fields",
            )
        walked.append(part)
    return validate(data)


_CLOSED = "。！？；.!?;…"


def join_clauses(items: Sequence[str], en: bool = False) -> str:
    """Items in one line, each ended once: 「…留下后果。青岚江…」, never 「后果。；青岚江」 (an
    item that ends a sentence needs no separator after it)."""
    sep = "; " if en else "；"
    out = ""
    for item in (i.strip() for i in items):
        if not item:
            continue
        if out and out[-1] not in _CLOSED:
            out += sep
        elif out and en:
            out += " "
        out += item
    return out


def render_summary(bp: Blueprint, lang: Lang) -> list[str]:
    """Short paragraphs for a chat message (the full JSON goes as an attachment)."""
    en = lang == "en"
    lines = [f"《{bp.title}》"]
    if bp.setting:
        lines.append(("Setting: " if en else "世界：") + bp.setting)
    if bp.places:
        lines.append(("Places: " if en else "地点：") + "、".join(bp.places))
    if bp.rules:
        lines.append(("Rules: " if en else "规则：") + join_clauses(bp.rules, en))
    if bp.factions:
        lines.append(
            ("Factions: " if en else "势力：") + join_clauses([f.name for f in bp.factions], en)
        )
    for c in bp.characters:
        bits = [c.name]
        if c.aliases:
            bits.append(f"（{'、'.join(c.aliases)}）")
        bits.append(f" — {c.status}")
        if c.location:
            bits.append(f"，{c.location}")
        if c.traits:
            bits.append(f"；{'、'.join(c.traits)}")
        lines.append("· " + "".join(bits))
    if bp.style:
        lines.append(("Style: " if en else "文风：") + bp.style)
    return lines
