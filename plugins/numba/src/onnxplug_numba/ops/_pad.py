"""Pad by slices: the output is allocated once, the (cropped) input copied into its middle, and
the margins filled axis by axis from the output itself (constant, reflect, edge or wrap), as
numpy.pad does but without its per-call set-up. Axis by axis, later axes read the full extent of
earlier ones, so corners come out as numpy.pad's. Margins a mode cannot fill by one slice (reflect
wider than the axis less one, wrap wider than the axis) go to numpy.pad."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def fits(shape: Sequence[int], grow: Sequence[tuple[int, int]], mode: str) -> bool:
    """Whether every margin of ``mode`` is one slice of the padded input (else numpy.pad)."""
    for n, (b, e) in zip(shape, grow):
        if (b or e) and n == 0:
            return mode == "constant"
        if mode == "reflect" and max(b, e) > n - 1:
            return False
        if mode == "wrap" and max(b, e) > n:
            return False
    return True


def pad(x: np.ndarray, grow: Sequence[tuple[int, int]], mode: str, fill: Any) -> np.ndarray:
    """``x`` grown by ``grow`` ((before, after) per axis, none negative) in ``mode``."""
    if not fits(x.shape, grow, mode):
        if mode == "constant":
            return np.pad(x, grow, mode="constant", constant_values=fill)
        return np.pad(x, grow, mode=mode)
    y = np.empty(tuple(n + b + e for n, (b, e) in zip(x.shape, grow)), dtype=x.dtype)
    y[tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, grow))] = x
    every = [slice(None)] * x.ndim
    for d, (n, (b, e)) in enumerate(zip(x.shape, grow)):
        if not (b or e):
            continue
        head, tail, inner = list(every), list(every), list(every)
        head[d], tail[d] = slice(0, b), slice(b + n, b + n + e)
        if mode == "constant":
            y[tuple(head)] = fill
            y[tuple(tail)] = fill
            continue
        if mode == "reflect":
            src_head = slice(2 * b, b, -1)
            stop = b + n - 2 - e
            src_tail = slice(b + n - 2, stop if stop >= 0 else None, -1)
        elif mode == "edge":
            src_head, src_tail = slice(b, b + 1), slice(b + n - 1, b + n)
        else:  # wrap
            src_head, src_tail = slice(n, n + b), slice(b, b + e)
        if b:
            inner[d] = src_head
            y[tuple(head)] = y[tuple(inner)]
        if e:
            inner[d] = src_tail
            y[tuple(tail)] = y[tuple(inner)]
    return y
