"""Weight layouts of the conv engine, worked out once per weight or input shape: read-only views
(so each compiled kernel has one signature), the tap layout of tap_conv, and the kernel taps that
meet the input at all (small feature maps drop the taps that only ever read padding)."""

from __future__ import annotations

import weakref
from typing import Sequence

import numpy as np

#: Weights in the tap layout (kh*kw, M, C) by the weight array's id, with a weak reference to check
#: the id still names that array: built once per weight, not on every call. Cleared when full, so
#: dead weights' copies do not pile up.
_TAP_WEIGHTS: dict[int, tuple[weakref.ref, np.ndarray]] = {}
_TAP_WEIGHTS_MAX = 256


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view: weights reach the kernels typed the same whether the model's arrays are
    writeable or not, so each kernel compiles once (and matches compile_helper's signatures)."""
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def tap_weights(w4: np.ndarray, constant: bool) -> np.ndarray:
    """``w4`` (M, C, kh, kw) as (kh*kw, M, C), C-contiguous float32; kept when ``constant``."""
    entry = _TAP_WEIGHTS.get(id(w4)) if constant else None
    if entry is not None and entry[0]() is w4:
        return entry[1]
    m, c, kh, kw = w4.shape
    taps = np.ascontiguousarray(w4.transpose(2, 3, 0, 1).reshape(kh * kw, m, c))
    if not constant:
        return taps
    if len(_TAP_WEIGHTS) >= _TAP_WEIGHTS_MAX:
        _TAP_WEIGHTS.clear()
    _TAP_WEIGHTS[id(w4)] = (weakref.ref(w4), taps)
    return taps


def reaching_taps(kernel: Sequence[int], size: Sequence[int], begin: Sequence[int], end: Sequence[int],
                   strides: Sequence[int], dilations: Sequence[int], out: Sequence[int]
                   ) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Per spatial axis, the range of kernel taps that meet the input at some output position, when
    that drops taps and leaves no negative pad; else None. A dropped tap only ever multiplies
    padding (small feature maps, such as 3x3 kernels on 1x1 inputs), so the conv is the same."""
    found = []
    for k, n, b, e, s, d, o in zip(kernel, size, begin, end, strides, dilations, out):
        # tap t meets the input at some output position y < o iff 0 <= y*s - b + t*d < n
        reach = [t for t in range(k) if max(0, -((t * d - b) // s)) <= min(o - 1, (n - 1 + b - t * d) // s)]
        if not reach:
            return None
        t0, t1 = reach[0], reach[-1] + 1
        if b - t0 * d < 0 or e - (k - t1) * d < 0:
            t0, t1 = 0, k
        found.append((t0, t1))
    if all(t == (0, k) for t, k in zip(found, kernel)):
        return None
    return found[0], found[1]
