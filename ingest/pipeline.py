"""load → clean → structure → chunk → annotate → index, one document at a time.

Each document goes to `Indexer.replace_document` once, with all its chunks: the indexer's
hash check makes re-ingesting an unchanged file a no-op (no embedding calls), and its
generation scheme keeps a failed or replaced version from ever being half visible.
A file that cannot be read is skipped with one reason; the others go on.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from ingest.chunkers import Piece, footnote_pieces, note_pieces, outline_pieces, prose_pieces
from ingest.clean import tidy
from ingest.headings import choose_title
from ingest.loaders import (
    DEFAULT_MAX_BYTES,
    BibleTable,
    LoadError,
    LoadOptions,
    Verse,
    check_size,
    is_bible_table,
    is_supported,
    load_bible,
    load_document,
)
from ingest.loaders.base import Document
from ingest.manifest import (
    DocMeta,
    Manifest,
    ManifestError,
    find_manifest,
    infer_era,
    is_manifest_file,
    load_manifest,
)
from ingest.read_process import ReadFailed, ReadOffload, ReadProcess, in_thread
from ingest.structure import (
    heading_path_at,
    infer_type,
    outline_from_blocks,
    parse_footnotes,
    parse_outline,
    prose_sections,
)
from retrieval.index import (
    EMBED_BATCH,
    DocumentRecord,
    GraphNames,
    Indexer,
    IndexReport,
    VerseRow,
    embed_text,
)
from retrieval.keyword import KeywordSpec
from retrieval.library import scoped_doc_id
from retrieval.producers import usable_author
from retrieval.scripture import (
    book_name_zh,
    find_references,
    normalise_refs,
    render_zh,
    sort_key,
)
from retrieval.text import search_form
from retrieval.types import (
    CORPUS_NAMESPACE,
    Chunk,
    ChunkType,
    SparseVector,
    chunk_id,
    content_hash,
)

log = logging.getLogger(__name__)

# Bump when chunking changes so every document is re-indexed once.
PIPELINE_VERSION = "ingest-3"  # 2: outline units, paragraph numbers, file-name titles; 3: one
# sentence splitter in the chunker, the keyword index cut with the shipped dictionary only
BIBLE_VERSION = "cuv1919"
BIBLE_SOURCE = "和合本（1919）"
DEFAULT_EMBED_BOOKS: tuple[str, ...] = ("Eph", "John", "Col")

Tagger = Callable[[str], Sequence[str]]
BooksChoice = Sequence[str] | Literal["all"]


# ---- progress and summary ---------------------------------------------------------------------


@dataclass(slots=True)
class IngestProgress:
    files_total: int
    files_done: int
    chunks_done: int  # chunks indexed (embedded) so far in this run
    current: str = ""  # the file being worked on
    doc_chunks_done: int = 0
    doc_chunks_total: int = 0
    elapsed: float = 0.0

    @property
    def chunks_per_s(self) -> float:
        return self.chunks_done / self.elapsed if self.elapsed > 0 else 0.0


OnProgress = Callable[[IngestProgress], None]


@dataclass(slots=True)
class IngestSummary:
    documents: int = 0  # added or replaced
    chunks: int = 0  # chunks written in those documents
    refs: int = 0  # distinct verse ids cited, summed per document
    concepts: int = 0  # concept mentions linked in the graph
    unchanged: int = 0
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    # The same skips with the reason in each language apart (chat replies pick one).
    problems: list[tuple[Path, LoadError]] = field(default_factory=list)
    seconds: float = 0.0
    verses: int = 0  # Bible verses put into the verse table
    results: list[tuple[Path, str, IndexReport]] = field(default_factory=list)

    def add(self, path: Path, doc_id: str, report: IndexReport) -> None:
        self.results.append((path, doc_id, report))
        if report.status == "unchanged":
            self.unchanged += 1
            return
        self.documents += 1
        self.chunks += report.chunks
        self.refs += report.refs
        self.concepts += report.concepts


# ---- tagging ----------------------------------------------------------------------------------


def synonym_tagger(groups: Iterable[Sequence[str]]) -> Tagger:
    """Canonical (first) term of every synonym group with a term in the text. CJK terms of
    two or more characters match as substrings of the search form; English terms as words."""
    canonical: dict[str, str] = {}
    for group in groups:
        for term in group:
            key = search_form(term).lower()
            if len(key) >= 2:
                canonical.setdefault(key, group[0])
    cjk = sorted((t for t in canonical if not t.isascii()), key=len, reverse=True)
    latin = sorted((t for t in canonical if t.isascii()), key=len, reverse=True)
    patterns = []
    if cjk:
        patterns.append("|".join(map(re.escape, cjk)))
    if latin:
        patterns.append(r"(?<![\w-])(?:" + "|".join(map(re.escape, latin)) + r")(?![\w-])")
    if not patterns:
        return lambda text: ()
    rx = re.compile("|".join(patterns))

    def tag(text: str) -> tuple[str, ...]:
        found = (canonical[m.group(0)] for m in rx.finditer(text.lower()))
        return tuple(dict.fromkeys(found))

    return tag


def default_tagger(graph: GraphNames | None = None) -> Tagger:
    """Synonym-table terms, plus the graph's concept labels when a graph is given."""
    from retrieval.synonyms import SynonymTable

    base = synonym_tagger(SynonymTable.load().groups)
    if graph is None:
        return base
    linker = graph

    def tag(text: str) -> tuple[str, ...]:
        tags = list(base(text))
        for node in linker.link(text):
            if node.startswith(("concept:", "topic:")):
                tags.append(linker.node_label(node))
        return tuple(dict.fromkeys(tags))

    return tag


# ---- building chunks (synchronous, CPU-bound) ------------------------------------------------


# Asked before a document is embedded (`Pipeline(admit=…)`): raise `LoadError` to refuse it.
Admit = Callable[[DocumentRecord, int], Awaitable[None]]


def doc_id_for(title: str) -> str:
    """Stable id from the title's search form: Traditional and Simplified titles agree."""
    key = " ".join(search_form(title).casefold().split())
    return "doc-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(slots=True)
class Built:
    record: DocumentRecord
    chunks: list[Chunk]
    verses: list[VerseRow] = field(default_factory=list)
    embed: bool = True
    # the chunks' keyword vectors, when the reading process cut them ahead (`_read_built`)
    keywords: list[SparseVector] | None = None


def _pieces(doc: Document, doc_type: ChunkType, title: str) -> list[Piece]:
    paths = [heading_path_at(doc.blocks, n.anchor) for n in doc.notes]
    notes = note_pieces(doc.notes, paths, find_references, render_zh)
    return _body_pieces(doc, doc_type, title) + notes


def _body_pieces(doc: Document, doc_type: ChunkType, title: str) -> list[Piece]:
    if doc_type == "outline":
        stated = outline_from_blocks(doc)
        own_title, points = stated or parse_outline(doc.plain_text().split("\n"))
        if points:
            return outline_pieces(own_title or title, points)
    if doc_type == "footnote":
        entries = parse_footnotes(doc)
        if entries:
            return footnote_pieces(entries, normalise_refs)
    return prose_pieces(prose_sections(doc))


def _sorted_refs(refs: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(refs), key=sort_key))


def build_chunks(
    pieces: Sequence[Piece],
    *,
    doc_id: str,
    source: str,
    doc_type: ChunkType,
    meta: DocMeta,
    language: Literal["zh", "en"],
    tagger: Tagger,
    namespace: str = CORPUS_NAMESPACE,
    ingested_at: str = "",
) -> list[Chunk]:
    chunks = []
    for position, piece in enumerate(pieces):
        text = tidy(piece.text)
        if not text:
            continue
        search_text = search_form(piece.search_source)
        text_hash = content_hash(text)
        chunks.append(
            Chunk(
                id=chunk_id(namespace, doc_id, position, text_hash),
                text=text,
                search_text=search_text,
                doc_id=doc_id,
                source=source,
                type=piece.kind or doc_type,
                chapter=piece.chapter,
                position=position,
                author=meta.author or "",
                year=meta.year,
                era=meta.era or "",
                language=language,
                topic_tags=tuple(tagger(search_text)),
                scripture_refs=_sorted_refs((*normalise_refs(text), *piece.refs)),
                namespace=namespace,
                content_hash=text_hash,
                ingested_at=ingested_at,
                extra=dict(piece.extra),
            )
        )
    return chunks


@dataclass(slots=True)
class Prepared:
    """A loaded document with its resolved metadata, id and content hash (no chunks yet)."""

    path: Path
    doc: Document
    meta: DocMeta  # every field resolved (title, type, language set)
    doc_id: str
    content_hash: str


def prepare_document(
    path: Path,
    meta: DocMeta,
    *,
    max_bytes: int,
    tagger_key: str = "",
    options: LoadOptions | None = None,
) -> Prepared:
    """Load and resolve metadata. The content hash covers the text blocks, the metadata, the
    pipeline version and the tagger, so an unchanged file is recognised before chunking."""
    doc = load_document(path, max_bytes, options)
    title = choose_title(meta.title, doc.title, path)
    doc_type: ChunkType = meta.type or infer_type(doc)
    language: Literal["zh", "en"] = "en" if (meta.language or doc.language) == "en" else "zh"
    era = meta.era or infer_era(meta.year)
    author = usable_author(meta.author) or usable_author(doc.author) or None  # no python-docx
    resolved = DocMeta(title, author, meta.year, era, doc_type, language)
    h = hashlib.sha256()
    head = [
        PIPELINE_VERSION,
        tagger_key,
        title,
        resolved.author,
        meta.year,
        era,
        doc_type,
        language,
    ]
    h.update(json.dumps(head, ensure_ascii=False).encode())
    for b in doc.blocks:
        h.update(f"\x00{b.kind}\x00{b.level}\x00{b.text}".encode())
    for n in doc.notes:
        h.update(f"\x01{n.number}\x00{n.anchor}\x00{n.quote}\x00{n.text}".encode())
    return Prepared(path, doc, resolved, doc_id_for(title), h.hexdigest())


def finish_document(p: Prepared, *, tagger: Tagger, namespace: str) -> Built:
    title = p.meta.title or p.path.stem
    doc_type: ChunkType = p.meta.type or "book"
    language: Literal["zh", "en"] = "en" if p.meta.language == "en" else "zh"
    now = _now()
    chunks = build_chunks(
        _pieces(p.doc, doc_type, title),
        doc_id=p.doc_id,
        source=title,
        doc_type=doc_type,
        meta=p.meta,
        language=language,
        tagger=tagger,
        namespace=namespace,
        ingested_at=now,
    )
    if not chunks:
        raise LoadError("文件中没有可索引的文字", "no indexable text in file")
    record = DocumentRecord(
        doc_id=p.doc_id,
        namespace=namespace,
        source=title,
        content_hash=p.content_hash,
        author=p.meta.author or "",
        year=p.meta.year,
        era=p.meta.era or "",
        type=doc_type,
        language=language,
        path=str(p.path.resolve()),
        chunk_count=len(chunks),
        ingested_at=now,
    )
    return Built(record, chunks)


def build_document(
    path: Path,
    meta: DocMeta,
    *,
    max_bytes: int,
    tagger: Tagger,
    namespace: str = CORPUS_NAMESPACE,
    tagger_key: str = "",
) -> Built:
    prepared = prepare_document(path, meta, max_bytes=max_bytes, tagger_key=tagger_key)
    return finish_document(prepared, tagger=tagger, namespace=namespace)


def _finish(prepared: Prepared, namespace: str, tagger: Tagger) -> Built:
    """`finish_document` with positional arguments (a `functools.partial` of it crosses to the
    reading process by reference)."""
    return finish_document(prepared, tagger=tagger, namespace=namespace)


def bible_doc_id(book: str, version: str = BIBLE_VERSION) -> str:
    return f"bible-{version}-{book}"


@dataclass(slots=True)
class BibleBook:
    """One book of a Bible table, planned: its verse rows, whether it is embedded, its hash, and
    the table and source it came from (the hash covers the source, so the build must use it)."""

    book: str
    doc_id: str
    verses: list[Verse]
    rows: list[VerseRow]
    embed: bool
    content_hash: str
    path: Path
    source: str


def plan_bible(
    table: BibleTable,
    *,
    embed_books: BooksChoice,
    version: str = BIBLE_VERSION,
    source: str = BIBLE_SOURCE,
    tagger_key: str = "",
) -> list[BibleBook]:
    by_book: dict[str, list[Verse]] = {}
    for v in table.verses:
        by_book.setdefault(v.book, []).append(v)
    wanted = set(by_book) if embed_books == "all" else set(embed_books)
    plans = []
    for book, verses in by_book.items():
        rows = [VerseRow(version, v.osis, v.book, v.chapter, v.verse, v.text) for v in verses]
        embed = book in wanted
        h = hashlib.sha256()
        head = [PIPELINE_VERSION, tagger_key if embed else "", source, version, book, embed]
        h.update(json.dumps(head, ensure_ascii=False).encode())
        for r in rows:
            h.update(f"\x00{r.osis}\t{r.text}".encode())
        doc_id = bible_doc_id(book, version)
        plans.append(
            BibleBook(book, doc_id, verses, rows, embed, h.hexdigest(), table.path, source)
        )
    return plans


def build_bible_book(
    plan: BibleBook, *, tagger: Tagger, namespace: str = CORPUS_NAMESPACE
) -> Built:
    """One registry document per book; one chunk per verse when the book is embedded
    (type "bible", chapter "以弗所书 1", scripture_refs = the verse)."""
    try:
        name = book_name_zh(plan.book)
    except Exception:  # unknown book id: keep the id
        name = plan.book
    now = _now()
    chunks: list[Chunk] = []
    if plan.embed:
        for position, v in enumerate(plan.verses):
            search_text = search_form(f"{name} {v.chapter}:{v.verse} {v.text}")
            text_hash = content_hash(v.text)
            chunks.append(
                Chunk(
                    id=chunk_id(namespace, plan.doc_id, position, text_hash),
                    text=v.text,
                    search_text=search_text,
                    doc_id=plan.doc_id,
                    source=plan.source,
                    type="bible",
                    chapter=f"{name} {v.chapter}",
                    position=position,
                    year=1919,
                    language="zh",
                    topic_tags=tuple(tagger(search_text)),
                    scripture_refs=(v.osis,),
                    namespace=namespace,
                    content_hash=text_hash,
                    ingested_at=now,
                    extra={"verse": v.verse, "book": plan.book},
                )
            )
    record = DocumentRecord(
        doc_id=plan.doc_id,
        source=plan.source,
        content_hash=plan.content_hash,
        year=1919,
        type="bible",
        language="zh",
        path=str(plan.path.resolve()),
        chunk_count=len(chunks),
        ingested_at=now,
    )
    return Built(record, chunks, plan.rows, plan.embed)


def _build_book(plan: BibleBook, namespace: str, tagger: Tagger) -> Built:
    return build_bible_book(plan, tagger=tagger, namespace=namespace)


def build_bible(
    table: BibleTable,
    *,
    embed_books: BooksChoice,
    tagger: Tagger,
    namespace: str = CORPUS_NAMESPACE,
    source: str = BIBLE_SOURCE,
) -> list[Built]:
    plans = plan_bible(table, embed_books=embed_books, source=source)
    return [build_bible_book(p, tagger=tagger, namespace=namespace) for p in plans]


# ---- walking paths ----------------------------------------------------------------------------


def _hidden(path: Path, root: Path) -> bool:
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = path.parts
    return any(p.startswith(".") for p in parts)


def expand_paths(paths: Iterable[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Files (as given) and folders (recursive, sorted; dotfiles and manifests ignored)."""
    files: list[Path] = []
    missing: list[tuple[Path, str]] = []
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and not _hidden(f, p) and not is_manifest_file(f):
                    files.append(f)
        elif p.is_file():
            if not is_manifest_file(p):
                files.append(p)
        else:
            missing.append((p, "文件不存在 (no such file or folder)"))
    return list(dict.fromkeys(files)), missing


# ---- the pipeline -----------------------------------------------------------------------------
#
# Two stages run at once. Reading (`_read_all`) loads, chunks and sends each document's chunks to
# the embedder, up to `AHEAD_DOCUMENTS` documents (and `AHEAD_CHUNKS` chunks) ahead of indexing;
# indexing (`ingest_paths`) takes the documents in order, tags their chunks with the graph as it
# stands then, and writes them with the vectors that came back meanwhile. While a batch is on its
# way to an embedding server, the next documents are being read and the one before is being
# indexed (keyword tokens, graph growth, the store). Tags wait for indexing because the graph a
# document is tagged with grows with every document indexed before it: the result is the one a
# document-by-document run gives. What is unchanged is recognised while reading (and checked
# again, in order, before anything is written). A large ingest reads in a process of its own
# (`ingest.read_process`, `Pipeline(reading=…)`): reading then runs on the other core instead of
# taking turns with indexing for this process's one (the GIL); the same functions, the same chunks.

AHEAD_DOCUMENTS = 16
AHEAD_CHUNKS = 2048


def _untagged(text: str) -> Sequence[str]:
    return ()


T = TypeVar("T")


class Read(Protocol):
    """Where reading work runs (`work`: a picklable callable of no arguments): on a thread of
    this process (`ingest.read_process.in_thread`) or in the reading process (`ReadProcess`)."""

    async def __call__(self, work: Callable[[], T], /) -> T: ...


def _warm() -> None:
    """The reading process's first work: unpickling it imports this module (the loaders, the
    chunkers), and a search form builds OpenCC's converter."""
    search_form("體")


def _read_built(build: Callable[[Tagger], Built], keywords: KeywordSpec) -> Built:
    """A document's chunks, untagged, with their keyword vectors: work for the reading
    process. The keyword tokens (jieba, ~1 ms a chunk) depend only on a chunk's text and the
    keyword dictionary, which does not grow during an ingest (`bot.app`), so they are cut
    on the other core too; tags are not, they wait for the graph in order."""
    built = build(_untagged)
    if built.embed and built.chunks:
        built.keywords = keywords.encoder().encode_chunks(built.chunks)
    return built


def _tagged(chunks: Sequence[Chunk], tagger: Tagger) -> list[Chunk]:
    return [replace(c, topic_tags=tuple(tagger(c.search_text))) for c in chunks]


@dataclass(slots=True)
class _Opened:
    path: Path
    problems: list[tuple[Path, str]]  # manifest files next to it that could not be read


@dataclass(slots=True)
class _Staged:
    """One document read ahead of indexing. `built`: its chunks, untagged, or None when it was
    unchanged as read (`build` then makes it, should that change before its turn); `vectors`:
    its chunks' dense vectors, on their way."""

    path: Path
    doc_id: str
    content_hash: str
    title: str  # checked against the other files' titles; "" for Bible books
    build: Callable[[Tagger], Built]
    built: Built | None = None
    vectors: asyncio.Future[list[list[float]]] | None = None


@dataclass(slots=True)
class _Closed:
    path: Path
    error: BaseException | None = None  # why reading it failed


_Item = _Opened | _Staged | _Closed


def _drop(vectors: asyncio.Future[list[list[float]]] | None) -> None:
    """Vectors no longer wanted: stop them coming; a failure among them was the document's
    (reported when it was indexed) or nobody's (its file had failed already)."""
    if vectors is None:
        return
    if not vectors.done():
        vectors.cancel()
    elif not vectors.cancelled():
        vectors.exception()  # retrieved, so asyncio does not log it as forgotten


class _Ahead:
    """How far reading runs ahead of indexing: documents and chunks read but not yet indexed.
    A document larger than the whole allowance still goes, alone."""

    def __init__(self, documents: int = AHEAD_DOCUMENTS, chunks: int = AHEAD_CHUNKS) -> None:
        self.documents, self.chunks = 0, 0
        self._limits = (documents, chunks)
        self._changed = asyncio.Condition()

    async def take(self, chunks: int) -> None:
        def room() -> bool:
            docs, most = self._limits
            return self.documents == 0 or (self.documents < docs and self.chunks + chunks <= most)

        async with self._changed:
            await self._changed.wait_for(room)
            self.documents += 1
            self.chunks += chunks

    async def give(self, chunks: int) -> None:
        async with self._changed:
            self.documents -= 1
            self.chunks -= chunks
            self._changed.notify_all()


class Pipeline:
    def __init__(
        self,
        indexer: Indexer,
        *,
        embed_books: BooksChoice = DEFAULT_EMBED_BOOKS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        tagger: Tagger | None = None,
        tagger_key: str = "custom",
        options: LoadOptions | None = None,
        namespace: str | None = None,
        admit: Admit | None = None,
        reading: ReadOffload | None = None,
    ) -> None:
        """`tagger_key` names a custom `tagger` in every document's content hash: change it
        when the tagger's output changes, so documents are re-tagged. `options`: how files
        are read (OCR of scanned pages). `namespace`: the part of the library documents go
        to (default: the shared library; a shelf's documents get ids of their own,
        `retrieval.library.scoped_doc_id`). `admit`: asked before a document is embedded,
        with its record and chunk count; it raises `LoadError` to refuse it (a full shelf).
        `reading`: when files are read in a process of their own (`ingest.read_process`);
        `reader` is then the last ingest's reading process (None: it read on threads)."""
        self.indexer = indexer
        self.options = options or LoadOptions()
        self.embed_books: BooksChoice = embed_books
        self.max_bytes = max_bytes
        self._tagger = tagger
        self._tagger_key: str | None = f"custom:{tagger_key}" if tagger is not None else None
        self.namespace = namespace or indexer.namespace
        self._admit = admit
        self.reading = reading or ReadOffload()
        self.reader: ReadProcess | None = None
        self._keywords: KeywordSpec | None = None  # the last ingest's, for its reading process

    @property
    def tagger_key(self) -> str:
        """Identifies what the tagger produces (part of every document's content hash)."""
        if self._tagger_key is None:
            from retrieval.synonyms import SynonymTable

            groups = repr(SynonymTable.load().groups).encode("utf-8")
            graph = "graph" if self.indexer.graph is not None else ""
            self._tagger_key = hashlib.sha256(groups).hexdigest()[:16] + graph
        return self._tagger_key

    @property
    def tagger(self) -> Tagger:
        if self._tagger is None:
            graph = self.indexer.graph
            self._tagger = default_tagger(graph.query if graph is not None else None)
        return self._tagger

    @staticmethod
    def _manifest_for(
        folder: Path, cache: dict[Path, Manifest], problems: list[tuple[Path, str]]
    ) -> Manifest:
        if folder not in cache:
            found = find_manifest(folder)
            manifest = Manifest({})
            if found is not None:
                try:
                    manifest = load_manifest(found)
                except ManifestError as err:
                    problems.append((found, err.reason))
            cache[folder] = manifest
        return cache[folder]

    async def ingest_paths(
        self,
        paths: Iterable[Path | str],
        manifest: Manifest | None = None,
        on_progress: OnProgress | None = None,
    ) -> IngestSummary:
        """Ingest files and folders. `manifest` (e.g. from CLI options) wins over the
        manifest files found next to the files, which win over inference."""
        started = time.perf_counter()
        summary = IngestSummary()
        files, missing = expand_paths(Path(p) for p in paths)
        summary.skipped.extend(missing)
        state = IngestProgress(files_total=len(files), files_done=0, chunks_done=0)

        def report(current: str = "", done: int = 0, total: int = 0) -> None:
            if on_progress is None:
                return
            state.current = current
            state.doc_chunks_done = done
            state.doc_chunks_total = total
            state.elapsed = time.perf_counter() - started
            on_progress(state)

        report()
        queue: asyncio.Queue[_Item | None] = asyncio.Queue()
        ahead = _Ahead()
        documents = [f for f in files if not is_bible_table(f)]
        reader = self.reader = ReadProcess(_warm) if self.reading.wants(documents) else None
        read: Read = in_thread
        if reader is not None:
            reader.start()  # the first files are read here while it starts
            read = reader
        # one spec an ingest (it names every word of the keyword dictionary): see `_read_built`
        self._keywords = self.indexer.keyword_spec() if reader is not None else None
        reading = asyncio.ensure_future(self._read_all(files, manifest, queue, ahead, read))
        try:
            try:
                await self._index_all(queue, ahead, summary, state, report)
            except BaseException:
                reading.cancel()
                raise
            await reading  # its own errors (not a file's: those are in `_Closed`) surface here
        finally:
            while not queue.empty():
                item = queue.get_nowait()
                if isinstance(item, _Staged):
                    _drop(item.vectors)
            if reader is not None:
                await reader.close()
        summary.seconds = time.perf_counter() - started
        return summary

    # ---- reading ahead ------------------------------------------------------------------------

    async def _read_all(
        self,
        files: Sequence[Path],
        manifest: Manifest | None,
        queue: asyncio.Queue[_Item | None],
        ahead: _Ahead,
        read: Read,
    ) -> None:
        cache: dict[Path, Manifest] = {}
        try:
            for path in files:
                opened = _Opened(path, [])
                queue.put_nowait(opened)
                try:
                    meta = self._meta(path, manifest, cache, opened.problems)
                    await self._read_file(path, meta, queue, ahead, read)
                except Exception as err:
                    queue.put_nowait(_Closed(path, err))
                else:
                    queue.put_nowait(_Closed(path))
        finally:
            queue.put_nowait(None)

    def _meta(
        self,
        path: Path,
        manifest: Manifest | None,
        cache: dict[Path, Manifest],
        problems: list[tuple[Path, str]],
    ) -> DocMeta:
        if not is_supported(path):
            raise LoadError(
                f"不支持的文件类型：{path.suffix or '无扩展名'}",
                f"unsupported file type {path.suffix or '(none)'}",
            )
        check_size(path, self.max_bytes)  # stat only: oversize files are never read
        folder_manifest = self._manifest_for(path.parent.resolve(), cache, problems)
        if manifest is not None:
            folder_manifest = folder_manifest.merged(manifest)
        return folder_manifest.for_path(path)

    async def _read_file(
        self,
        path: Path,
        meta: DocMeta,
        queue: asyncio.Queue[_Item | None],
        ahead: _Ahead,
        read: Read,
    ) -> None:
        if is_bible_table(path):
            # On threads here: a verse's search form (~0.1 ms) costs less than its rows and
            # chunk would to cross to the reading process and back.
            table = await asyncio.to_thread(load_bible, path, self.max_bytes)
            source = meta.title or BIBLE_SOURCE
            plans = plan_bible(
                table, embed_books=self.embed_books, source=source, tagger_key=self.tagger_key
            )
            for plan in plans:
                build = functools.partial(_build_book, plan, self.namespace)
                staged = _Staged(path, plan.doc_id, plan.content_hash, "", build)
                await self._stage(staged, queue, ahead, in_thread)
            return
        prepared = await read(
            functools.partial(
                prepare_document,
                path,
                meta,
                max_bytes=self.max_bytes,
                tagger_key=self.tagger_key,
                options=self.options,
            )
        )
        prepared.doc_id = scoped_doc_id(self.namespace, prepared.doc_id)
        build = functools.partial(_finish, prepared, self.namespace)
        title = prepared.meta.title or ""
        staged = _Staged(path, prepared.doc_id, prepared.content_hash, title, build)
        await self._stage(staged, queue, ahead, read)

    async def _stage(
        self, staged: _Staged, queue: asyncio.Queue[_Item | None], ahead: _Ahead, read: Read
    ) -> None:
        """Chunk the document (unless it is unchanged as it reads) and start embedding it."""
        if not await self._is_registered(staged.doc_id, staged.content_hash):
            keywords = self._keywords if read is not in_thread else None
            work = (
                functools.partial(_read_built, staged.build, keywords)
                if keywords is not None
                else functools.partial(staged.build, _untagged)
            )
            staged.built = await read(work)
        chunks = staged.built.chunks if staged.built is not None else []
        await ahead.take(len(chunks))
        if staged.built is not None and staged.built.embed and chunks:
            staged.vectors = asyncio.ensure_future(self._embed(chunks))
        queue.put_nowait(staged)

    async def _embed(self, chunks: Sequence[Chunk]) -> list[list[float]]:
        """The chunks' dense vectors, in batches of the indexer's size, all sent at once (the
        embedder decides how many are really in flight)."""
        texts = [embed_text(c) for c in chunks]
        embedder = self.indexer.embedder
        parts = await asyncio.gather(
            *(
                embedder.embed_passages(texts[start : start + EMBED_BATCH])
                for start in range(0, len(texts), EMBED_BATCH)
            )
        )
        return [vector for part in parts for vector in part]

    async def _is_registered(self, doc_id: str, content_hash: str) -> bool:
        record = await self.indexer.document(doc_id)
        return record is not None and record.content_hash == content_hash

    # ---- indexing, in order -------------------------------------------------------------------

    async def _index_all(
        self,
        queue: asyncio.Queue[_Item | None],
        ahead: _Ahead,
        summary: IngestSummary,
        state: IngestProgress,
        report: Callable[[str, int, int], None],
    ) -> None:
        failed: BaseException | None = None  # the file being indexed failed: skip the rest
        while (item := await queue.get()) is not None:
            if isinstance(item, _Opened):
                failed = None
                summary.skipped.extend(item.problems)
                report(item.path.name, 0, 0)
            elif isinstance(item, _Staged):
                try:
                    if failed is None:
                        await self._index_staged(item, summary, state, report)
                except Exception as err:
                    failed = err
                finally:
                    await self._done_with(item, ahead)
            else:
                self._close(item.path, item.error or failed, summary)
                state.files_done += 1
                report(item.path.name, 0, 0)

    @staticmethod
    async def _done_with(item: _Staged, ahead: _Ahead) -> None:
        _drop(item.vectors)
        await ahead.give(len(item.built.chunks) if item.built is not None else 0)

    @staticmethod
    def _close(path: Path, error: BaseException | None, summary: IngestSummary) -> None:
        if error is None:
            return
        if isinstance(error, LoadError):
            summary.skipped.append((path, error.reason))
            summary.problems.append((path, error))
            return
        log.warning("ingest of %s failed", path, exc_info=error)
        kind = error.kind if isinstance(error, ReadFailed) else type(error).__name__
        summary.skipped.append((path, f"索引失败 (indexing failed): {kind}: {error}"))
        failed = LoadError("索引失败", f"indexing failed: {kind}")
        summary.problems.append((path, failed))

    async def _index_staged(
        self,
        staged: _Staged,
        summary: IngestSummary,
        state: IngestProgress,
        report: Callable[[str, int, int], None],
    ) -> None:
        if staged.title:
            self._check_duplicate(staged.path, staged.doc_id, staged.title, summary)
        if await self._unchanged(staged.path, staged.doc_id, staged.content_hash, summary):
            return
        tagger = self.tagger
        if staged.built is None:  # unchanged when read, changed since: made now, in order
            built = await asyncio.to_thread(staged.build, tagger)
        else:
            built = staged.built
            built.chunks = await asyncio.to_thread(_tagged, built.chunks, tagger)
        vectors = await staged.vectors if staged.vectors is not None else None
        await self._index(staged.path, built, summary, state, report, vectors)
        if not built.verses:
            await self._drop_renamed(built.record)

    async def _drop_renamed(self, record: DocumentRecord) -> None:
        """One file is one document: when the file was indexed before under another title
        (a new --title, a manifest entry, or an older title rule), that version goes."""
        stale = [
            r
            for r in await self.indexer.find_documents(record.path, [self.namespace])
            if r.doc_id != record.doc_id and r.type != "bible"
        ]
        if stale:
            log.info("%s was indexed as %s; replaced", record.path, [r.source for r in stale])
            await self.indexer.delete_documents(stale)

    @staticmethod
    def _check_duplicate(path: Path, doc_id: str, title: str, summary: IngestSummary) -> None:
        first = next((p for p, d, _ in summary.results if d == doc_id), None)
        if first is not None and first != path:
            raise LoadError(
                f"标题与 {first.name} 相同（「{title}」），请在清单或 --title 中区分",
                f"same title as {first.name} ({title!r}); set a distinct title",
            )

    async def _unchanged(
        self, path: Path, doc_id: str, content_hash: str, summary: IngestSummary
    ) -> bool:
        """Registered with the same hash: report unchanged without chunking or embedding."""
        record = await self.indexer.document(doc_id)
        if record is None or record.content_hash != content_hash or record.trashed:
            return False  # (a document in the trash is indexed afresh)
        summary.add(path, doc_id, IndexReport("unchanged", record.chunk_count))
        return True

    async def _index(
        self,
        path: Path,
        built: Built,
        summary: IngestSummary,
        state: IngestProgress,
        report: Callable[[str, int, int], None],
        vectors: Sequence[list[float]] | None = None,
    ) -> None:
        base = state.chunks_done
        label = path.name if not built.verses else f"{path.name} · {built.record.doc_id}"

        def progress(done: int, total: int) -> None:
            state.chunks_done = base + done
            report(label, done, total)

        if self._admit is not None:
            await self._admit(built.record, len(built.chunks))
        try:
            result = await self.indexer.replace_document(
                built.record,
                built.chunks,
                embed=built.embed,
                progress=progress,
                vectors=vectors,
                keywords=built.keywords,
            )
        except Exception:
            # Points of the failed generation may already be in the store (the first embedding
            # batches); the registry never recorded them, so reconcile removes exactly those.
            await self.indexer.reconcile()
            raise
        if built.verses and (result.status != "unchanged" or not await self.indexer.has_bible()):
            await self.indexer.put_verses(built.verses, doc_id=built.record.doc_id)
            summary.verses += len(built.verses)
        if result.status != "unchanged":
            state.chunks_done = base + len(built.chunks)
        summary.add(path, built.record.doc_id, result)
