"""Scatter helpers: write or fold updates into rows of a copy of the data, vectorised.

ScatterND and ScatterElements both reduce to "rows of a 2-D view of the data, one update row each":
ScatterND's rows are slices ``data[i0, ..., ik-1]``, ScatterElements' rows are single elements.
"""

from __future__ import annotations

import math

import numpy as np

from onnxplug.providers.numpy.ops._shape_util import normalize_indices

#: The ufunc folding duplicates for each ``reduction``; ``none`` assigns (the last write wins).
_REDUCTIONS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
#: Up to this many updates per target, duplicates are applied in rounds (fast fancy indexing);
#: beyond, ufunc.reduceat folds them (slower per element, but independent of the multiplicity).
_MAX_ROUNDS = 16


def scatter_rows(data: np.ndarray, n_rows: int, rows: np.ndarray, updates: np.ndarray,
                 reduction: str) -> np.ndarray:
    """A copy of ``data`` (seen as ``n_rows`` rows) with ``updates[j]`` written or folded into row ``rows[j]``."""
    out = data.copy()
    ufunc = _REDUCTIONS.get(reduction)
    if ufunc is None and reduction != "none":
        raise ValueError(f"unsupported reduction {reduction!r} (expected none, add, mul, max or min)")
    if rows.size == 0:  # nothing to write (and a -1 reshape of an empty array is ambiguous)
        return out
    flat = out.reshape(n_rows, -1)
    updates = updates.reshape(rows.size, -1)
    if ufunc is None:
        flat[rows] = updates
        return out
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_rows[1:] != sorted_rows[:-1])))
    counts = np.diff(np.append(starts, rows.size))
    if counts.max() <= _MAX_ROUNDS:
        # Few duplicates: apply the k-th update of every target row in round k, in input order.
        occurrence = np.empty(rows.size, dtype=np.int64)
        occurrence[order] = np.arange(rows.size) - np.repeat(starts, counts)
        for k in range(int(counts.max())):
            pick = np.flatnonzero(occurrence == k)
            targets = rows[pick]
            flat[targets] = ufunc(flat[targets], updates[pick])
        return out
    # Many duplicates: fold each run of equal targets first, then combine with the data once.
    folded = ufunc.reduceat(updates[order], starts, axis=0)
    targets = sorted_rows[starts]
    flat[targets] = ufunc(flat[targets], folded)
    return out


def scatter_nd(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, reduction: str) -> np.ndarray:
    """ScatterND: each row of ``indices`` (k coordinates) addresses the slice ``data[i0, ..., ik-1]``."""
    k = indices.shape[-1]
    lead = data.shape[:k]
    coords = normalize_indices(indices.reshape(-1, k), np.asarray(lead, dtype=np.int64))
    rows = np.ravel_multi_index(tuple(coords.T), lead) if k else np.zeros(len(coords), dtype=np.int64)
    return scatter_rows(data, math.prod(lead), np.asarray(rows, dtype=np.int64), updates, reduction)


def scatter_elements(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: int,
                     reduction: str) -> np.ndarray:
    """ScatterElements: ``indices`` replace the coordinate along ``axis``; others are positions."""
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = normalize_indices(indices, data.shape[axis])
    rows = np.ravel_multi_index(tuple(np.broadcast_arrays(*grid)), data.shape).reshape(-1)
    return scatter_rows(data, data.size, rows, updates, reduction)
