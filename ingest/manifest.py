"""Per-file metadata: `manifest.toml` / `manifest.yaml` next to the files, CLI options, and
inference from the document when both are silent.

manifest.toml:
    [[documents]]
    file = "message-01.md"      # relative to the manifest's folder
    title = "…"  author = "…"  year = 1975  era = "Lee-post1970"
    type = "message"            # book | message | outline | footnote
    language = "zh"             # zh | en

manifest.yaml: `documents:` a list of the same mappings (a bare list works too).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import asdict, astuple, dataclass, replace
from pathlib import Path
from typing import Any, cast, get_args

from ingest.errors import BilingualError
from retrieval.types import ChunkType

MANIFEST_NAMES = ("manifest.toml", "manifest.yaml", "manifest.yml")
DOC_TYPES: tuple[str, ...] = ("book", "message", "outline", "footnote")
_ALL_TYPES = get_args(ChunkType)


def infer_era(year: int | None) -> str | None:
    """The era of a document whose metadata gives a year and no era: its decade, "1984" →
    "1980s" (the rule the README states). None without a year, or for a year that cannot be a
    publication year (outside 1000–2999)."""
    if year is None or not 1000 <= year <= 2999:
        return None
    return f"{year // 10 * 10}s"


class ManifestError(BilingualError, ValueError):
    def __init__(self, path: Path, reason_zh: str, reason_en: str) -> None:
        super().__init__(reason_zh, reason_en, f"{path}: {reason_en}")
        self.path = path

    @property
    def reason(self) -> str:
        return f"清单文件有误：{super().reason}"


@dataclass(frozen=True, slots=True)
class DocMeta:
    """Metadata for one document; None = not given (inferred later)."""

    title: str | None = None
    author: str | None = None
    year: int | None = None
    era: str | None = None
    type: ChunkType | None = None
    language: str | None = None

    def over(self, base: DocMeta) -> DocMeta:
        """self's given fields win over base's."""
        values = asdict(self)
        return replace(base, **{k: v for k, v in values.items() if v is not None})

    def is_empty(self) -> bool:
        return all(value is None for value in astuple(self))


def meta_from_mapping(data: Mapping[str, Any], where: Path) -> DocMeta:
    def text(key: str) -> str | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str | int | float):
            raise ManifestError(where, f"{key} 应为文字", f"{key} must be a string")
        return str(value).strip() or None

    year_raw = data.get("year")
    year: int | None = None
    if year_raw not in (None, ""):
        try:
            year = int(str(year_raw))
        except ValueError:
            raise ManifestError(
                where, f"year 应为整数：{year_raw}", f"year must be an integer: {year_raw}"
            ) from None
    doc_type = text("type")
    if doc_type is not None and doc_type not in _ALL_TYPES:
        raise ManifestError(
            where,
            f"type 应为 {'|'.join(DOC_TYPES)}：{doc_type}",
            f"type must be one of {'|'.join(DOC_TYPES)}: {doc_type}",
        )
    language = text("language")
    if language is not None and language not in ("zh", "en"):
        raise ManifestError(
            where, f"language 应为 zh 或 en：{language}", f"language must be zh or en: {language}"
        )
    return DocMeta(
        title=text("title"),
        author=text("author"),
        year=year,
        era=text("era"),
        type=cast(ChunkType | None, doc_type),
        language=language,
    )


@dataclass(frozen=True, slots=True)
class Manifest:
    """Entries by resolved file path, plus defaults (CLI options) applied to every file."""

    entries: Mapping[Path, DocMeta]
    defaults: DocMeta = DocMeta()

    def for_path(self, path: Path) -> DocMeta:
        """CLI options fill in or override a file's entry, except its title: a manifest names
        each file, `--title` only says what to call a file nobody named."""
        entry = self.entries.get(path.resolve(), DocMeta())
        meta = self.defaults.over(entry)
        return replace(meta, title=entry.title) if entry.title else meta

    def merged(self, other: Manifest) -> Manifest:
        """`other` wins: its entries and its defaults over ours."""
        return Manifest({**self.entries, **other.entries}, other.defaults.over(self.defaults))


def load_manifest(path: Path) -> Manifest:
    """Parse one manifest file; raises ManifestError with a one-line reason."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ManifestError(path, "无法读取", f"cannot read: {err.strerror or err}") from None
    data: Any
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(raw.decode("utf-8-sig"))
        else:
            import yaml

            data = yaml.safe_load(raw.decode("utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as err:
        raise ManifestError(path, f"格式错误：{err}", f"syntax error: {err}") from None
    except Exception as err:
        raise ManifestError(path, f"格式错误：{err}", f"syntax error: {err}") from None
    if isinstance(data, dict):
        items = data.get("documents", [])
    elif isinstance(data, list):
        items = data
    elif data is None:
        items = []
    else:
        raise ManifestError(path, "应包含 documents 列表", "expected a `documents` list")
    if not isinstance(items, list):
        raise ManifestError(path, "documents 应为列表", "`documents` must be a list")
    entries: dict[Path, DocMeta] = {}
    for item in items:
        if not isinstance(item, dict) or not item.get("file"):
            raise ManifestError(path, "每一项都需要 file", "every entry needs `file`")
        target = (path.parent / str(item["file"])).resolve()
        entries[target] = meta_from_mapping(item, path)
    return Manifest(entries)


def find_manifest(folder: Path) -> Path | None:
    for name in MANIFEST_NAMES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def is_manifest_file(path: Path) -> bool:
    return path.name.lower() in MANIFEST_NAMES
