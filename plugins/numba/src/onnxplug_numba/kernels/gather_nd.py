"""GatherND as one compiled pass: data viewed as (batch, rows, inner) with rows the product of the
indexed axes, indices as (batch, n, k); each index tuple becomes a row number (negatives wrapped)
and its inner slice is copied. An index out of range stops the pass and is reported to the caller."""

from __future__ import annotations

from numba import njit


@njit(nogil=True, cache=True)
def gather_nd(data, idx, dims, out):  # type: ignore[no-untyped-def]
    """out[b, j] = data[b, row(idx[b, j])]; returns -1, or the flat position in ``idx`` of the first
    index outside its axis (out is then incomplete)."""
    batch, n, k = idx.shape
    inner = data.shape[2]
    for b in range(batch):
        for j in range(n):
            row = 0
            for a in range(k):
                i = idx[b, j, a]
                size = dims[a]
                if i < 0:
                    i += size
                if i < 0 or i >= size:
                    return (b * n + j) * k + a
                row = row * size + i
            src = data[b, row]
            dst = out[b, j]
            for e in range(inner):
                dst[e] = src[e]
    return -1
