"""Transposes that are a (batched) matrix transpose, copied in cache-sized tiles.

numpy copies a transposed view in the output's order, reading the input a whole output row apart;
an image going channels-first (N, H, W, C) -> (N, C, H, W) of a few MB then misses the cache on
almost every read. Any permutation that, once size-1 axes are dropped and axes that stay adjacent
are merged, is (batch, rows, cols) -> (batch, cols, rows) with short rows (``cols`` at most
MAX_COLS) is copied here in stripes of whole input rows: each stripe's reads and writes stay in
L1/L2. Stripes go to the product threads when large enough. (Long input rows numpy copies well.)
Values are copied, never computed: the result is the same array numpy's copy gives.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from onnxplug.providers.numpy.runtime.blas import parallel_for

#: Values of a tile (32 KiB of float32).
TILE_VALUES = 8192
#: Longest input rows (cols) taken here, and fewest input rows per stripe.
MAX_COLS = 256
MIN_STRIPE_ROWS = 8
#: Tensors from this many values take the tiled copy; smaller ones fit in cache anyway.
MIN_VALUES = 16384


def matrix_transpose(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, int, int] | None:
    """(batch, rows, cols) when ``x.transpose(axes)`` of a C-contiguous ``x`` of ``shape`` is
    ``x.reshape(batch, rows, cols).transpose(0, 2, 1)`` (reshaped), else None."""
    dims = [i for i in range(len(shape)) if shape[i] != 1]
    rank = {a: j for j, a in enumerate(dims)}
    order = [rank[a] for a in axes if shape[a] != 1]
    runs: list[list[int]] = []
    for a in order:
        if runs and runs[-1][-1] + 1 == a:
            runs[-1].append(a)
        else:
            runs.append([a])
    sizes = [math.prod(shape[dims[a]] for a in run) for run in runs]
    if len(runs) == 2 and runs[1][0] == 0:
        return 1, sizes[1], sizes[0]
    if len(runs) == 3 and runs[0][0] == 0 and runs[2][0] == runs[0][-1] + 1:
        return sizes[0], sizes[2], sizes[1]
    return None


def tiled_transpose(x: np.ndarray, out: np.ndarray, batch: int, rows: int, cols: int, macs_per_value: int) -> None:
    """``out`` (any shape of the same size, C-contiguous) = ``x`` read as (batch, rows, cols),
    transposed to (batch, cols, rows); for ``cols`` at most MAX_COLS."""
    src = x.reshape(batch, rows, cols)
    dst = out.reshape(batch, cols, rows)
    tr = max(MIN_STRIPE_ROWS, TILE_VALUES // cols)
    stripes = -(-rows // tr)

    def stripe(u: int) -> None:
        b, s = divmod(u, stripes)
        r0 = s * tr
        np.copyto(dst[b, :, r0:r0 + tr], src[b, r0:r0 + tr].T)

    units = batch * stripes
    if units < 2 or not parallel_for(units, stripe, x.size * macs_per_value):
        for u in range(units):
            stripe(u)
