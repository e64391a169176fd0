"""`baibao ingest PATH… | --list | --delete DOC | --trash | --restore DOC` (wired into
bot/cli.py, which also hands in where each change is logged).

`--delete` moves a document to the trash, as `/ingest delete` does in chat; `--restore`
brings it back without embedding it again; `--trash` lists what is there. Purging is the
trash's own scheduled job (`TRASH_DAYS`)."""

from __future__ import annotations

import argparse
import re
import sys
import time
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from ingest.loaders.ocr import DEFAULT_LANGUAGES
from ingest.manifest import DOC_TYPES, DocMeta, Manifest

if TYPE_CHECKING:
    # The pipeline (loaders, chunkers, the indexer) is read when a path is ingested, not to
    # build `baibao`'s argument parser or to list documents.
    from ingest.pipeline import BooksChoice, IngestProgress, IngestSummary
    from retrieval.index import DocumentRecord, Indexer
    from retrieval.types import ChunkType


def add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="files or folders (PDF, Word .docx, EPUB, TXT, Markdown, Bible .tsv/.tsv.gz)",
    )
    parser.add_argument("--title", help="title (source) of the document; one file only")
    parser.add_argument("--author")
    parser.add_argument("--year", type=int)
    parser.add_argument("--era", help='e.g. "Lee-post1970"')
    parser.add_argument("--type", choices=DOC_TYPES, dest="doc_type")
    parser.add_argument("--language", choices=("zh", "en"))
    parser.add_argument(
        "--max-size-mb", type=float, default=100.0, help="skip files larger than this (default 100)"
    )
    parser.add_argument(
        "--bible-books",
        default=None,
        help='books of a Bible table to embed: "Eph,John,Col" or "all" (default: DEMO_BIBLE_BOOKS); '
        "without PATH, re-ingests the bundled 1919 CUV with these books embedded",
    )
    parser.add_argument(
        "--ocr",
        nargs="?",
        const=DEFAULT_LANGUAGES,
        default=None,
        metavar="LANGS",
        action=OcrLanguages,
        help="read scanned PDF pages (no text layer) with tesseract: --ocr FILE, FILE --ocr, "
        f"--ocr=chi_tra FILE; LANGS default {DEFAULT_LANGUAGES}",
    )
    parser.set_defaults(ocr_files=[])
    parser.add_argument("--list", action="store_true", help="list ingested documents")
    parser.add_argument(
        "--delete",
        metavar="DOC",
        help="delete a document (title, id, file name or path) to the trash",
    )
    parser.add_argument("--trash", action="store_true", help="list the documents in the trash")
    parser.add_argument(
        "--restore", metavar="DOC", help="bring a document back from the trash (no re-embedding)"
    )


# Logs one change: (what was done, what came of it) — the change log (`bot.changes`).
Record = Callable[[str, str], Awaitable[None]]


async def _not_recorded(what: str, outcome: str) -> None:
    return None


# Tesseract language names: chi_sim, chi_tra_vert, eng, several joined by "+".
_LANGUAGES = re.compile(r"^[a-z]{3}(?:_[a-z]+)*(?:\+[a-z]{3}(?:_[a-z]+)*)*$")


class OcrLanguages(argparse.Action):
    """`--ocr [LANGS]`. The word after `--ocr` is LANGS only when it names tesseract
    languages (`chi_tra`, `chi_sim+eng`) and no such file exists; otherwise it is a file to
    ingest (`baibao ingest --ocr 扫描本.pdf`, as the refusal of a scan suggests), read with
    the default languages."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        word = values if isinstance(values, str) else None
        if word is None or (_LANGUAGES.match(word) and not Path(word).exists()):
            setattr(namespace, self.dest, word or self.const)
            return
        setattr(namespace, self.dest, self.const)
        namespace.ocr_files = [*namespace.ocr_files, Path(word)]


def _width(s: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def _pad(s: str, width: int) -> str:
    return s + " " * max(0, width - _width(s))


def _clip(s: str, width: int) -> str:
    out = ""
    for c in s:
        if _width(out + c) > width - 1:
            return out + "…"
        out += c
    return out


def _bible_rows(records: Sequence[DocumentRecord]) -> list[tuple[str, str, str, str, str]]:
    """A Bible table is one document per book: one row per table, saying how many books are
    embedded (searchable) and how many only in the verse table (for /cite)."""
    tables: dict[tuple[str, str], list[DocumentRecord]] = {}
    for r in records:
        tables.setdefault((r.source, r.path), []).append(r)
    rows = []
    for (source, path), books in tables.items():
        embedded = sum(1 for r in books if r.chunk_count)
        note = (
            f"{embedded} 卷嵌入，另 {len(books) - embedded} 卷仅经文表 / {embedded} books embedded, "
            f"{len(books) - embedded} verse table only"
        )
        rows.append(
            (
                f"{source}（{note}）",
                "bible",
                str(sum(r.chunk_count for r in books)),
                min(r.ingested_at for r in books)[:19],
                _clip(Path(path).name, 40) if path else "",
            )
        )
    return rows


def format_table(records: Sequence[DocumentRecord]) -> str:
    rows: list[tuple[str, str, str, str, str]] = [
        (
            _clip(r.source, 40),
            r.type,
            str(r.chunk_count),
            r.ingested_at[:19],
            _clip(Path(r.path).name, 40) if r.path else "",
        )
        for r in records
        if r.type != "bible"
    ]
    rows += _bible_rows([r for r in records if r.type == "bible"])
    head = ("来源 source", "类型 type", "块数 chunks", "入库时间 ingested (UTC)", "文件 file")
    return _table(head, rows)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell (CJK counting two), a rule under the head."""
    widths = [max(_width(x[i]) for x in [head, *rows]) for i in range(len(head))]
    lines = [
        "  ".join(_pad(c, w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [head, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


async def delete_documents(
    indexer: Indexer, key: str, out: TextIO, err: TextIO, record: Record = _not_recorded
) -> int:
    """`--delete KEY`: a title, id, path or file name, to the trash. A file name that several
    ingested files share (two folders with a notes.txt) deletes nothing and lists them."""
    found = await indexer.find_documents(key)
    if not found:
        print(
            f"找不到文档：{key}（可用标题、ID、文件名或路径；用 --list 查看）/ "
            f"no document with title, id, file name or path {key!r} (see --list)",
            file=err,
        )
        return 1
    if len({r.path for r in found}) > 1:
        print(
            f"「{key}」对应多个文件，请改用标题或路径 / {key!r} names several files; "
            "give the title or the path:",
            file=err,
        )
        for r in found:
            print(f"  {r.source}  ({r.path})", file=err)
        return 1
    removed = await indexer.trash_documents(found, by="console:cli")
    if len(removed) <= 3:
        lines = [f"已删除 deleted: {r.source} ({r.doc_id})" for r in removed]
    else:  # one Bible table: a line per book says nothing more
        name = Path(removed[0].path).name
        lines = [f"已删除 deleted: {name}（{len(removed)} 个文档 documents）"]
    lines.append("已移入回收站，可用 --restore 恢复 / moved to the trash; --restore brings it back")
    print("\n".join(lines), file=out)
    await record(f"ingest --delete {key}", lines[0])
    return 0


async def restore_document(
    indexer: Indexer, key: str, out: TextIO, err: TextIO, record: Record = _not_recorded
) -> int:
    """`--restore KEY`: the document back from the trash, as it was."""
    found = await indexer.find_documents(key, trashed=True)
    back = [r for r in [await indexer.restore_document(f) for f in found] if r is not None]
    if not back:
        print(
            f"回收站里没有：{key}（用 --trash 查看）/ not in the trash: {key!r} (see --trash)",
            file=err,
        )
        return 1
    line = "已恢复 restored: " + ", ".join(f"{r.source} ({r.chunk_count} 块 chunks)" for r in back)
    print(line, file=out)
    await record(f"ingest --restore {key}", line)
    return 0


def format_trash(records: Sequence[DocumentRecord]) -> str:
    if not records:
        return "回收站是空的。/ The trash is empty."
    head = ("来源 source", "书库 library", "块数 chunks", "删除时间 deleted (UTC)", "删除者 by")
    rows = [
        (_clip(r.source, 40), r.namespace, str(r.chunk_count), r.trashed_at[:19], r.trashed_by)
        for r in records
    ]
    return _table(head, rows)


class ProgressBar:
    """A one-line progress bar on stderr (callable as `on_progress`)."""

    def __init__(self, label: str = "", stream: TextIO | None = None, width: int = 24) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self._last = 0.0
        self._shown = False

    def __call__(self, p: IngestProgress) -> None:
        now = time.monotonic()
        final = p.files_done == p.files_total
        if not final and now - self._last < 0.1:
            return
        self._last = now
        frac = p.files_done / p.files_total if p.files_total else 1.0
        if p.doc_chunks_total and p.files_total:
            frac += (p.doc_chunks_done / p.doc_chunks_total) / p.files_total
        filled = int(min(1.0, frac) * self.width)
        bar = "█" * filled + "░" * (self.width - filled)
        line = (
            f"{self.label + ' ' if self.label else ''}[{bar}] {p.files_done}/{p.files_total} 文件 files"
            f" · {p.chunks_done} 块 chunks · {p.chunks_per_s:.1f} 块/秒 chunks/s"
            f"{' · ' + p.current if p.current else ''}"
        )
        self.stream.write("\r" + _clip(line, 118).ljust(118))
        self.stream.flush()
        self._shown = True

    def finish(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False


def format_summary(s: IngestSummary) -> str:
    lines = [
        f"完成 / done: {s.documents} 个文档 documents, {s.chunks} 块 chunks, "
        f"{s.refs} 处经文 refs, {s.concepts} 个概念 concepts, "
        f"{s.unchanged} 个未变 unchanged, {len(s.skipped)} 个跳过 skipped "
        f"({s.seconds:.1f} 秒 s)"
    ]
    if s.verses:
        lines.append(f"经文表 verse table: {s.verses} 节 verses")
    for path, reason in s.skipped:
        lines.append(f"跳过 skipped: {path}: {reason}")
    return "\n".join(lines)


def _books(value: str) -> BooksChoice:
    if value.strip().lower() == "all":
        return "all"
    return [b.strip() for b in value.split(",") if b.strip()]


async def _records(indexer: Indexer, args: argparse.Namespace, record: Record) -> int | None:
    """`--list`, `--trash`, `--delete`, `--restore` (None: none of them was asked)."""
    out = sys.stdout
    if args.list:
        records = await indexer.documents()
        if not records:
            print("还没有导入任何文档。/ No documents ingested yet.", file=out)
        else:
            print(format_table(records), file=out)
        return 0
    if args.trash:
        print(format_trash(await indexer.trash()), file=out)
        return 0
    if args.delete:
        return await delete_documents(indexer, args.delete, out, sys.stderr, record)
    if args.restore:
        return await restore_document(indexer, args.restore, out, sys.stderr, record)
    return None


async def run_ingest(
    indexer: Indexer,
    args: argparse.Namespace,
    record: Record = _not_recorded,
    *,
    read_process: bool = True,
) -> int:
    """`baibao ingest …`; `record` logs each change it makes; `read_process`: whether a large
    ingest reads in a process of its own (`INGEST_READ_PROCESS`, `ingest.read_process`)."""
    out = sys.stdout
    done = await _records(indexer, args, record)
    if done is not None:
        return done
    from ingest.loaders.base import LoadOptions
    from ingest.pipeline import Pipeline, expand_paths
    from ingest.read_process import ReadOffload

    paths: list[Path] = [*args.ocr_files, *args.paths]
    if not paths and args.bible_books:
        from ingest.samples import SAMPLES_DIR

        paths = [SAMPLES_DIR / "cuv-1919-traditional.tsv.gz"]
    if not paths:
        print(
            "请给出要导入的文件或文件夹 / give files or folders to ingest "
            "(baibao ingest PATH… | --list | --delete DOC | --trash | --restore DOC)",
            file=sys.stderr,
        )
        return 2
    if args.title:
        files, _ = expand_paths(paths)
        if len(files) > 1:
            print("--title 只能用于单个文件 / --title applies to a single file", file=sys.stderr)
            return 2
    if args.max_size_mb <= 0:
        print("--max-size-mb 必须大于 0 / must be > 0", file=sys.stderr)
        return 2
    defaults = DocMeta(
        title=args.title,
        author=args.author,
        year=args.year,
        era=args.era,
        type=cast("ChunkType | None", args.doc_type),
        language=args.language,
    )
    pipeline = Pipeline(
        indexer,
        embed_books=_books(args.bible_books or "Eph,John,Col"),
        max_bytes=int(args.max_size_mb * 1024 * 1024),
        options=LoadOptions(ocr=args.ocr),
        reading=ReadOffload(enabled=read_process),
    )
    bar = ProgressBar("导入 ingest")
    summary = await pipeline.ingest_paths(paths, manifest=Manifest({}, defaults), on_progress=bar)
    if summary.chunks:
        # Index what was written: searches of an unindexed segment read every point (a store
        # also indexes each `Layout.segment_points` points as they come, to bound memory).
        await indexer.store.optimize()
    bar.finish()
    report = format_summary(summary)
    print(report, file=out)
    if summary.documents:
        await record(f"ingest {' '.join(str(p) for p in paths)}", report.splitlines()[0])
    return 1 if summary.skipped else 0
