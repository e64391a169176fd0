"""The compact mention index: provenance per document, bulk load equal to adding row by row."""

from __future__ import annotations

from retrieval.graph.storage import Mentions

ROWS = [
    ("docA", "a1", "concept:x"),
    ("docA", "a1", "book:A"),
    ("docA", "a2", "concept:x"),
    ("docB", "b1", "concept:x"),
    ("llm:docA", "a1", "concept:x"),  # a second document says the same
    ("llm:docA", "a2", "concept:y"),
    ("docA", "a3-a-much-longer-chunk-id", "concept:y"),
]


def added() -> Mentions:
    m = Mentions()
    for doc, chunk, node in ROWS:
        m.add(doc, [(chunk, node)])
    return m


def loaded() -> Mentions:
    m = Mentions()
    m.load([m.pack(ROWS[:3]), m.pack(ROWS[3:])])
    return m


def test_a_bulk_load_equals_adding_row_by_row() -> None:
    a, b = added(), loaded()
    assert a.rows() == b.rows()
    assert a.rows()[0] == ("book:A", "a1", ("docA",))
    assert ("concept:x", "a1", ("docA", "llm:docA")) in a.rows()
    for m in (a, b):
        assert m.total == 6
        assert m.chunk_total == 4
        assert m.count("concept:x") == 3
        assert m.chunks("concept:y") == {"a2", "a3-a-much-longer-chunk-id"}
        assert m.documents() == {"docA", "docB", "llm:docA"}
        assert m.has_chunk("a3-a-much-longer-chunk-id")
        assert not m.has_chunk("a3-a-much-longer-chunk-id-and-more")
        assert not m.has_chunk("zz")


def test_dropping_a_document_keeps_what_another_still_says() -> None:
    for m in (added(), loaded()):
        m.drop_doc("docA")
        assert m.chunks("concept:x") == {"a1", "b1"}  # a1 still on llm:docA's word
        assert m.chunks("book:A") == set()
        assert m.count("book:A") == 0
        assert m.chunk_total == 3
        m.drop_doc("llm:docA")
        assert m.chunks("concept:x") == {"b1"}
        assert m.chunks("concept:y") == set()
        assert m.chunk_total == 1
        assert m.documents() == {"docB"}


def test_adding_again_changes_nothing_and_drop_chunks_forgets_every_document() -> None:
    for m in (added(), loaded()):
        before = m.rows()
        m.add("docA", [("a1", "concept:x"), ("a2", "concept:x")])
        assert m.rows() == before
        m.drop_chunks(["a1", "unknown"])
        assert m.chunks("concept:x") == {"a2", "b1"}
        assert not m.has_chunk("a1")
        m.drop_doc("llm:docA")  # its a1 mention is gone already: nothing to undo twice
        assert m.chunks("concept:x") == {"a2", "b1"}
        assert m.chunk_total == 3


def test_chunks_added_after_a_load_are_numbered_on() -> None:
    m = loaded()
    m.add("docC", [("c1", "concept:x"), ("a1", "concept:z")])
    assert m.chunks("concept:x") == {"a1", "a2", "b1", "c1"}
    assert m.chunks("concept:z") == {"a1"}
    assert m.names(m.chunk_numbers("concept:z").tolist()) == ["a1"]
    assert m.chunk_total == 5


def test_names_keep_the_order_asked_whether_loaded_or_added_later() -> None:
    m = loaded()
    m.add("docC", [("c1", "concept:x")])
    mixed = m.chunk_numbers("concept:x")[::-1]  # c1 (added later) first, then loaded ones
    one_by_one = [m.names([int(i)])[0] for i in mixed]
    assert one_by_one[0] == "c1" and sorted(one_by_one) == ["a1", "a2", "b1", "c1"]
    assert m.names(mixed) == m.names(mixed.tolist()) == one_by_one
    at_load = mixed[1:]  # all named at load: the one-gather path
    assert m.names(at_load) == one_by_one[1:] and m.names(at_load[:0]) == []
