"""Compiled reductions over the middle axis of a (outer, reduced, inner) view.

Any set of adjacent reduced axes is such a view without a copy. Sums accumulate in float64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

KINDS = {"ReduceSum": 0, "ReduceMean": 1, "ReduceMax": 2, "ReduceMin": 3, "ReduceProd": 4,
         "ReduceSumSquare": 5, "ReduceL1": 6, "ReduceL2": 7, "ReduceLogSum": 8, "ReduceLogSumExp": 9}


@njit(inline="always", cache=True)
def _start(kind):  # type: ignore[no-untyped-def]
    if kind == 2 or kind == 9:
        return -np.inf
    if kind == 3:
        return np.inf
    if kind == 4:
        return 1.0
    return 0.0


@njit(inline="always", cache=True)
def _step(kind, acc, v):  # type: ignore[no-untyped-def]
    if kind == 2:
        return v if (v > acc or v != v) else acc
    if kind == 3:
        return v if (v < acc or v != v) else acc
    if kind == 4:
        return acc * v
    if kind == 5 or kind == 7:
        return acc + v * v
    if kind == 6:
        return acc + abs(v)
    return acc + v


@njit(inline="always", cache=True)
def _finish(kind, acc, count):  # type: ignore[no-untyped-def]
    if kind == 1:
        return acc / count
    if kind == 7:
        return np.sqrt(acc)
    if kind == 8:
        return np.log(acc)
    return acc


@njit(nogil=True, cache=True)
def reduce_rows(x, kind, out):  # type: ignore[no-untyped-def]
    """out[o] = reduce(x[o, :]) for x (outer, reduced)."""
    outer, count = x.shape
    for o in range(outer):
        if kind == 9:
            top = -np.inf
            for r in range(count):
                v = float(x[o, r])
                if v > top:
                    top = v
            if top == -np.inf or top == np.inf:
                out[o] = top
                continue
            s = 0.0
            for r in range(count):
                s += np.exp(float(x[o, r]) - top)
            out[o] = top + np.log(s)
            continue
        acc = _start(kind)
        for r in range(count):
            acc = _step(kind, acc, float(x[o, r]))
        out[o] = _finish(kind, acc, count)


@njit(nogil=True, cache=True)
def reduce_middle(x, kind, out):  # type: ignore[no-untyped-def]
    """out[o, i] = reduce(x[o, :, i]) for x (outer, reduced, inner); inner loops stay contiguous."""
    outer, count, inner = x.shape
    for o in range(outer):
        acc = np.empty(inner, dtype=np.float64)
        start = _start(kind)
        for i in range(inner):
            acc[i] = start
        if kind == 9:
            for r in range(count):
                for i in range(inner):
                    v = float(x[o, r, i])
                    if v > acc[i]:
                        acc[i] = v
            top = acc.copy()
            for i in range(inner):
                acc[i] = 0.0
            for r in range(count):
                for i in range(inner):
                    if np.isfinite(top[i]):
                        acc[i] += np.exp(float(x[o, r, i]) - top[i])
            for i in range(inner):
                out[o, i] = top[i] + np.log(acc[i]) if np.isfinite(top[i]) else top[i]
            continue
        for r in range(count):
            for i in range(inner):
                acc[i] = _step(kind, acc[i], float(x[o, r, i]))
        for i in range(inner):
            out[o, i] = _finish(kind, acc[i], count)
