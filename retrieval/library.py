"""The library's parts, as the retrieval core names them: the shared library every reader
reads, a shelf per reader (a chat, for the bot), and the trash.

Each part is a namespace of the vector store (the payload key every search filters on). A
document lives in one of them: its shelf's or the shared library's while it is live, the
trash's once deleted (`Indexer.trash_documents`: the points move, vectors and all, so a
restore embeds nothing). A `Reading` is what one reader sees: the namespaces its searches
read, and the documents whose knowledge-graph contributions it must not see (the trash, and
every other reader's shelf).
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.types import CORPUS_NAMESPACE

SHARED = CORPUS_NAMESPACE
TRASH = "trash"
_SHELF = "shelf:"


def shelf_namespace(owner: str) -> str:
    """The namespace of `owner`'s shelf (`owner` is opaque here: the bot's chat key)."""
    if not owner:
        raise ValueError("a shelf needs an owner")
    return _SHELF + owner


def is_shelf(namespace: str) -> bool:
    return namespace.startswith(_SHELF)


def scoped_doc_id(namespace: str, doc_id: str) -> str:
    """A document's id in `namespace`: a shelf's documents carry their shelf in their id, so
    two shelves may hold a document of the same title (the shared library's keep theirs)."""
    return doc_id if namespace == SHARED else f"{namespace}/{doc_id}"


@dataclass(frozen=True, slots=True)
class Reading:
    """What one reader sees of the library: `namespaces` to search (the shared library,
    then its shelf when that holds anything), and `hidden`, the documents whose contributions
    to the knowledge graph it must not see. `shelf`: its shelf's namespace ("" for none)."""

    namespaces: tuple[str, ...] = (SHARED,)
    hidden: frozenset[str] = frozenset()
    shelf: str = ""


SHARED_ONLY = Reading()
