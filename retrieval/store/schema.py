"""What every VectorStore implementation shares: vector names, payload indexes, input
validation and an SDK-neutral translation of `retrieval.types.Filter`.

The adapters (Edge, server) map `FilterPlan` onto their SDK's classes; the in-process fake
evaluates `Filter.matches` directly but runs the same validation, so bad input fails the
same way everywhere.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from retrieval.types import Filter, FilterValue, IndexedChunk, SparseVector

DENSE = "dense"
SPARSE = "bm25"

IndexKind = Literal["keyword", "integer", "bool"]

# Payload indexes created by every store (keys are `Chunk.payload()` keys).
PAYLOAD_INDEXES: tuple[tuple[str, IndexKind], ...] = (
    ("source", "keyword"),
    ("type", "keyword"),
    ("era", "keyword"),
    ("language", "keyword"),
    ("scripture_refs", "keyword"),
    ("namespace", "keyword"),
    ("doc_id", "keyword"),
    ("topic_tags", "keyword"),
    ("x_novel", "keyword"),
    ("x_tags", "keyword"),
    ("x_current", "bool"),
    ("x_chapter_no", "integer"),
    ("x_version", "integer"),
    # Plot chunks vs chapter summary points (novel L2 / L3): every plot-memory query filters it.
    ("x_kind", "keyword"),
    # The Indexer's generation: reconcile filters on it. (The graph track reads chunks by point
    # id, `Filter.ids`; shards written before that also hold an unused `x_cid` index.)
    ("x_gen", "integer"),
)

Scalar = str | int | bool


@dataclass(frozen=True, slots=True)
class Match:
    """`key` equals one of `values` (for list payloads: any element does)."""

    key: str
    values: tuple[Scalar, ...]


@dataclass(frozen=True, slots=True)
class Range:
    """`low <= key <= high`; a missing bound is open."""

    key: str
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class FilterPlan:
    must: tuple[Match | Range, ...]
    must_not: tuple[Match, ...]
    ids: tuple[str, ...] | None = None  # canonical point ids, sorted; () matches nothing

    @property
    def empty(self) -> bool:
        return not self.must and not self.must_not and self.ids is None


def _check_key(key: object, where: str) -> str:
    if not isinstance(key, str) or not key:
        raise ValueError(f"Filter.{where}: keys must be non-empty strings, got {key!r}")
    return key


def _match(key: str, wanted: FilterValue, where: str) -> Match:
    if isinstance(wanted, bool | int | str):
        return Match(key, (wanted,))
    if isinstance(wanted, list | tuple | set | frozenset):
        values = tuple(wanted)
        if not values:
            raise ValueError(f"Filter.{where}[{key!r}] is an empty list (matches nothing)")
        if all(isinstance(v, str) for v in values) or all(
            isinstance(v, int) and not isinstance(v, bool) for v in values
        ):
            return Match(key, values)
        raise ValueError(
            f"Filter.{where}[{key!r}]: an any-of list must hold only strings or only "
            f"integers, got {values!r}"
        )
    raise ValueError(
        f"Filter.{where}[{key!r}]: expected a string, integer, boolean or a list of them, "
        f"got {type(wanted).__name__} (use Filter.ranges for numeric bounds)"
    )


def plan(flt: Filter | None) -> FilterPlan:
    """Validate a Filter and turn it into SDK-neutral conditions. Raises ValueError."""
    if flt is None:
        return FilterPlan((), ())
    must: list[Match | Range] = []
    must_not: list[Match] = []
    for key, wanted in flt.equals.items():
        must.append(_match(_check_key(key, "equals"), wanted, "equals"))
    for key, bounds in flt.ranges.items():
        must.append(_range(_check_key(key, "ranges"), bounds))
    for key, wanted in flt.not_equals.items():
        must_not.append(_match(_check_key(key, "not_equals"), wanted, "not_equals"))
    ids = None if flt.ids is None else _point_ids(flt.ids)
    return FilterPlan(tuple(must), tuple(must_not), ids)


def _range(key: str, bounds: object) -> Range:
    """A (low, high) pair of finite numbers (either may be None, not both), low ≤ high."""
    if not isinstance(bounds, tuple) or len(bounds) != 2:
        raise ValueError(f"Filter.ranges[{key!r}] must be a (low, high) tuple, got {bounds!r}")
    low, high = bounds
    for bound in (low, high):
        if bound is not None and (
            isinstance(bound, bool)
            or not isinstance(bound, int | float)
            or not math.isfinite(bound)
        ):
            raise ValueError(f"Filter.ranges[{key!r}]: bounds must be finite numbers or None")
    if low is None and high is None:
        raise ValueError(f"Filter.ranges[{key!r}] has no bound")
    if low is not None and high is not None and low > high:
        raise ValueError(f"Filter.ranges[{key!r}]: low {low} is above high {high}")
    return Range(key, None if low is None else float(low), _f(high))


def _point_ids(ids: object) -> tuple[str, ...]:
    if not isinstance(ids, Set):
        raise ValueError(f"Filter.ids must be a set of point ids, got {ids!r}")
    try:
        return tuple(sorted({point_id(i) for i in ids}))
    except ValueError as exc:
        raise ValueError(f"Filter.ids: {exc}") from None


def check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")


def _f(value: float | None) -> float | None:
    return None if value is None else float(value)


def point_id(raw: str) -> str:
    """The canonical form of a chunk id; point ids must be UUID strings."""
    try:
        return str(uuid.UUID(raw))
    except (ValueError, AttributeError, TypeError):
        raise ValueError(f"chunk id must be a UUID string, got {raw!r}") from None


def dense_matrix(vectors: Sequence[Sequence[float]], dim: int) -> npt.NDArray[np.float32]:
    """Validate dense vectors (size, finite, non-zero) and return them as float32 rows."""
    if not vectors:
        return np.zeros((0, dim), dtype=np.float32)
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"dense vectors must be {dim}-d lists of numbers: {exc}") from None
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        sizes = sorted({len(v) for v in vectors})
        raise ValueError(f"dense vectors must have {dim} dimensions, got {sizes}")
    if not np.isfinite(matrix).all():
        raise ValueError("dense vectors must be finite (NaN or infinity found)")
    if (np.abs(matrix).sum(axis=1) == 0).any():
        raise ValueError("a dense vector is all zeros (cosine similarity is undefined)")
    return matrix


def dense_query(vector: Sequence[float], dim: int, limit: int) -> list[float]:
    """Validate one dense search, its limit and then its vector; the vector as a list."""
    check_limit(limit)
    row: list[float] = dense_matrix([vector], dim)[0].tolist()
    return row


def sparse_query(vector: SparseVector, limit: int) -> tuple[list[int], list[float]]:
    """Validate one sparse search, its limit and then its vector."""
    check_limit(limit)
    return check_sparse(vector)


def check_sparse(vector: SparseVector) -> tuple[list[int], list[float]]:
    indices = [int(i) for i in vector.indices]
    values = [float(v) for v in vector.values]
    if len(indices) != len(values):
        raise ValueError(f"sparse vector has {len(indices)} indices but {len(values)} values")
    if len(set(indices)) != len(indices):
        raise ValueError("sparse vector indices must be unique")
    if any(i < 0 or i >= 2**32 for i in indices):
        raise ValueError("sparse vector indices must be in [0, 2**32)")
    if not all(math.isfinite(v) for v in values):
        raise ValueError("sparse vector values must be finite")
    return indices, values


@dataclass(frozen=True, slots=True)
class PreparedPoint:
    id: str
    dense: list[float]
    sparse_indices: list[int]
    sparse_values: list[float]
    payload: dict[str, Any]


def prepare(items: Sequence[IndexedChunk], dim: int) -> list[PreparedPoint]:
    """Validate a batch for upsert; the last item wins when ids repeat."""
    matrix = dense_matrix([item.dense for item in items], dim)
    out: dict[str, PreparedPoint] = {}
    for row, item in zip(matrix, items, strict=True):
        pid = point_id(item.chunk.id)
        indices, values = check_sparse(item.sparse)
        out[pid] = PreparedPoint(pid, row.tolist(), indices, values, item.chunk.payload())
    return list(out.values())


_JSON_SCALARS = (str, int, float, bool, type(None))


def move_payload(flt: FilterPlan, namespace: str) -> dict[str, Any]:
    """What `VectorStore.move` writes, checked: a namespace, and a filter that names points."""
    if flt.empty:
        raise ValueError("refusing to move with an empty filter")
    if not isinstance(namespace, str) or not namespace:
        raise ValueError(f"a namespace is a non-empty string, got {namespace!r}")
    return {"namespace": namespace}


def extra_payload(values: Mapping[str, object]) -> dict[str, Any]:
    """`set_extra` values → payload keys `x_<name>`; values must be JSON scalars or lists."""
    if not values:
        raise ValueError("set_extra needs at least one value")
    out: dict[str, Any] = {}
    for name, value in values.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"extra names must be non-empty strings, got {name!r}")
        if name.startswith("x_"):
            raise ValueError(f"give the extra name without the 'x_' prefix: {name!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"extra {name!r} must be finite")
        if isinstance(value, list | tuple):
            if not all(isinstance(v, _JSON_SCALARS) for v in value):
                raise ValueError(f"extra {name!r}: list items must be JSON scalars")
            out[f"x_{name}"] = list(value)
        elif isinstance(value, _JSON_SCALARS):
            out[f"x_{name}"] = value
        else:
            raise ValueError(
                f"extra {name!r}: expected a JSON scalar or a list, got {type(value).__name__}"
            )
    return out
