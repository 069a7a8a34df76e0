"""Run a chain of elementwise numpy passes over cache-sized blocks of rows.

A kernel made of many numpy passes (erf's rational function, GELU, layer norm) streams every
temporary through memory once per pass when the tensor is larger than the L2 cache. Applied to
blocks of about ``BLOCK_ELEMENTS`` values, the same passes stay in cache.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

#: Values per block: 128 KiB of float32, so a few live temporaries fit in a 512 KiB L2 cache.
BLOCK_ELEMENTS = 32 * 1024


def by_row_blocks(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """``fn(x)`` for an ``fn`` that treats each row (last axis) on its own, computed in blocks of rows.

    ``fn`` may broadcast other operands over the last axis (a bias, a scale); the result has x's
    shape and the dtype ``fn`` returns.
    """
    if x.size <= BLOCK_ELEMENTS or x.ndim == 0:
        return fn(x)
    inner = x.shape[-1]
    rows = x.size // inner if inner else 0
    step = max(1, BLOCK_ELEMENTS // max(inner, 1))
    if rows <= step:
        return fn(x)
    flat = x.reshape(rows, inner)
    first = fn(flat[:step])
    out = np.empty((rows, inner), dtype=first.dtype)
    out[:step] = first
    for lo in range(step, rows, step):
        out[lo:lo + step] = fn(flat[lo:lo + step])
    return out.reshape(x.shape)
