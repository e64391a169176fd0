"""The bundled sample corpus: the 1919 CUV verse table plus original sample texts.

`ensure_sample_corpus` runs on the first start only: every CUV verse goes into the verse
table (fast; `/cite` needs no embedding), only the chosen books are embedded as one chunk per
verse, then the sample messages, outlines and footnotes (with their manifest) are ingested.
"""

from __future__ import annotations

from pathlib import Path

from ingest.manifest import find_manifest, load_manifest
from ingest.pipeline import (
    BooksChoice,
    IngestSummary,
    OnProgress,
    Pipeline,
    bible_doc_id,
    doc_id_for,
    expand_paths,
)
from retrieval.index import Indexer

SAMPLES_DIR = Path(__file__).parent / "samples"
CUV_TABLE = SAMPLES_DIR / "cuv-1919-traditional.tsv.gz"


def expected_doc_ids(bible_books: BooksChoice, samples_dir: Path = SAMPLES_DIR) -> set[str]:
    """Registry ids the sample corpus produces (without reading the texts)."""
    ids: set[str] = set()
    if bible_books != "all":
        ids.update(bible_doc_id(b) for b in bible_books)
    manifest_path = find_manifest(samples_dir)
    manifest = load_manifest(manifest_path) if manifest_path else None
    files, _ = expand_paths([samples_dir])
    for f in files:
        if f.name.endswith((".tsv", ".tsv.gz")):
            continue
        title = manifest.for_path(f).title if manifest else None
        ids.add(doc_id_for(title or f.stem))
    return ids


async def ensure_sample_corpus(
    indexer: Indexer,
    bible_books: BooksChoice,
    on_progress: OnProgress | None = None,
    *,
    samples_dir: Path = SAMPLES_DIR,
) -> IngestSummary | None:
    """Ingest the samples unless they are already there; the summary when it ran, else None."""
    have = {d.doc_id for d in await indexer.documents()}
    if await indexer.has_bible() and expected_doc_ids(bible_books, samples_dir) <= have:
        if bible_books != "all" or any(d.startswith("bible-") for d in have):
            return None
    pipeline = Pipeline(indexer, embed_books=bible_books)
    return await pipeline.ingest_paths([samples_dir], on_progress=on_progress)
