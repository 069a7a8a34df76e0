"""The Python path of stride-1 convs too small for a prange region or not float32: im2col over a
zero-padded copy of each image, whose rows are single contiguous copies, then BLAS and the
compiled pitched epilogue; work items are (image, row band) tiles spread over the session's threads."""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from onnxplug_numba.kernels import conv as kconv
from onnxplug_numba.threads import ThreadControl


@functools.lru_cache(maxsize=256)
def _tap_offsets(cg: int, kh: int, kw: int, hp: int, wp: int, dh: int, dw: int) -> np.ndarray:
    """Offset of tap (c, i, j) in a padded (cg, hp, wp) image, in im2col row order."""
    rows = (np.arange(cg)[:, None] * hp + np.arange(kh)[None, :] * dh) * wp
    taps = (rows[:, :, None] + np.arange(kw)[None, None, :] * dw).reshape(-1).astype(np.int64)
    taps.flags.writeable = False
    return taps


def pitched_conv(x4: np.ndarray, wmat: np.ndarray, kernel: tuple[int, int], bias: np.ndarray,
                 r3: np.ndarray | None, act: tuple[int, float, float], steps: tuple[int, int, int],
                 begin: Sequence[int], out_hw: tuple[int, int], y: np.ndarray,
                 items: list[tuple[int, int, int]], threads: ThreadControl, grain: int) -> None:
    """im2col + BLAS for stride-1 convs, over a zero-padded copy of each image.

    In a padded image of row pitch ``wp``, tap (c, i, j) of output element ``e = yo * wp + xo``
    sits at ``offset(c, i, j) + e``, so each im2col row is one contiguous copy. The product has
    ``wp >= ow`` columns per output row; the epilogue drops the extra ones.
    """
    n, c, h, wd = x4.shape
    group, mg, _ = wmat.shape
    cg = c // group
    kh, kw = kernel
    _, dh, dw = steps
    oh, ow = out_hw
    wp = max(wd + begin[1], ow + (kw - 1) * dw)
    hp = max(h + begin[0], oh + (kh - 1) * dh) + 2  # slack rows for the extra columns
    code, alpha, beta = act
    taps = _tap_offsets(cg, kh, kw, hp, wp, dh, dw)
    dummy = np.zeros((mg, 1, 1), dtype=y.dtype)  # the residual argument when there is none (not read)

    def work(lo: int, hi: int) -> None:
        padded = np.empty((c, hp, wp), dtype=x4.dtype)
        # only the margins need zeros: the image overwrites the rest
        padded[:, :begin[0]] = 0
        padded[:, begin[0] + h:] = 0
        padded[:, begin[0]:begin[0] + h, :begin[1]] = 0
        padded[:, begin[0]:begin[0] + h, begin[1] + wd:] = 0
        image = -1
        for i, r0, r1 in items[lo:hi]:
            if i != image:
                padded[:, begin[0]:begin[0] + h, begin[1]:begin[1] + wd] = x4[i]
                image = i
            flat = padded.reshape(-1)
            count = (r1 - r0) * wp
            cols = np.empty((cg * kh * kw, count), dtype=x4.dtype)
            product = np.empty((mg, count), dtype=x4.dtype)
            for g in range(group):
                kconv.gather_rows(flat, taps + (g * cg * hp + r0) * wp, 1, cols)
                np.matmul(wmat[g], cols, out=product)
                out = y[i, g * mg:(g + 1) * mg, r0:r1]
                res = r3[i, g * mg:(g + 1) * mg].reshape(mg, oh, ow)[:, r0:r1] if r3 is not None else dummy
                kconv.epilogue_pitched(product, wp, bias[g * mg:(g + 1) * mg], res, r3 is not None,
                                       code, alpha, beta, out)

    threads.run(work, len(items), grain)
