"""3x3 stride-1 convolutions by Winograd's minimal filtering F(4x4, 3x3) (Lavin and Gray, 2016).

Every 6x6 input tile (tiles step by 4) and every 3x3 kernel go to a 6x6 transform domain, where the
convolution becomes 36 products over the channels, (K x C) @ (C x tiles): a quarter of im2col's
multiply-adds. The transforms are separable BLAS products. It pays with enough tiles to reuse the
4x larger transformed weights (``tuning.winograd_min_tiles``) and enough channels (``MIN_CHANNELS``). Its float32
results differ from im2col's by about 1e-5 of the output's magnitude, several times onnxruntime's
error, so the path is off by default (provider option ``winograd``): results must not be less
accurate than onnxruntime's for speed's sake. Work goes on the product threads in units of about
``tuning.winograd_unit_tiles`` tiles, each transformed, multiplied and written while in cache. Constant weights
keep their transform, 4x the kernel's size.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS, parallel_for
from onnxplug.providers.numpy.kernels.conv.depthwise import Epilogue
from onnxplug.providers.numpy.runtime.scratch import ThreadScratch
from onnxplug.providers.numpy.runtime.tuning import DEFAULT_TUNING, NumpyTuning
from onnxplug.providers.numpy.kernels.conv.strided import strided_view

#: Fewest input and output channels: below, the transforms cost more than the products save.
MIN_CHANNELS = 32
# Also needed (``tuning``): ``winograd_min_tiles`` 4x4 output tiles over all images (each
# transformed weight is used once per tile) and ``winograd_min_macs`` multiply-adds counted as
# im2col does (a call makes ~25 numpy calls). An image (or a band of its tile rows) needs
# ``winograd_unit_tiles`` tiles to be a unit of its own; with fewer, all images go in one unit whose
# 36 products are shared over the threads.

#: float32 only: float64 convolutions carry QLinearConv's and ConvInteger's exact integer sums,
#: which the transforms' fractions would round.
_FLOAT32 = np.dtype(np.float32)
# Lavin and Gray's F(4x4, 3x3) at the points 0, +-1, +-2: Y = A^T [(G g G^T) * (B^T d B)] A
_BT = np.array([[4, 0, -5, 0, 1, 0],
                [0, -4, -4, 1, 1, 0],
                [0, 4, -4, -1, 1, 0],
                [0, -2, -1, 2, 1, 0],
                [0, 2, -1, -2, 1, 0],
                [0, 4, 0, -5, 0, 1]], dtype=np.float32)
_G = np.array([[1 / 4, 0, 0],
               [-1 / 6, -1 / 6, -1 / 6],
               [-1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6],
               [1 / 24, -1 / 12, 1 / 6],
               [0, 0, 1]], dtype=np.float64)
_AT = np.array([[1, 1, 1, 1, 1, 0],
                [0, 1, -1, 2, -2, 0],
                [0, 1, 1, 4, 4, 0],
                [0, 1, -1, 8, -8, 1]], dtype=np.float32)


def winograd_fits(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides: Sequence[int],
                  dilations: Sequence[int], begin: Sequence[int], end: Sequence[int], group: int,
                  tuning: NumpyTuning = DEFAULT_TUNING) -> bool:
    """Whether ``winograd_conv`` takes this convolution: switched on (``tuning.winograd``), 2-D,
    3x3, stride 1, no dilation or group, non-negative pads, float32, and enough channels, tiles and
    work."""
    if not tuning.winograd or x.ndim != 4 or w.shape[2:] != (3, 3) or group != 1:
        return False
    if tuple(strides) != (1, 1) or tuple(dilations) != (1, 1) or min(begin) < 0 or min(end) < 0:
        return False
    if x.dtype != _FLOAT32 or w.dtype != _FLOAT32 or (b is not None and b.dtype != _FLOAT32):
        return False
    n, c, h, wd = x.shape
    k = w.shape[0]
    oh, ow = h + begin[0] + end[0] - 2, wd + begin[1] + end[1] - 2
    if min(c, k) < MIN_CHANNELS or oh <= 0 or ow <= 0:
        return False
    tiles = n * -(-oh // 4) * -(-ow // 4)
    return tiles >= tuning.winograd_min_tiles and n * k * c * 9 * oh * ow >= tuning.winograd_min_macs


def transform_weights(w: np.ndarray) -> np.ndarray:
    """The kernels (K, C, 3, 3) in the transform domain, G g G^T, as 36 matrices (36, K, C);
    computed in float64."""
    u = np.einsum("ai,kcij,bj->abkc", _G, w.astype(np.float64), _G, optimize=True)
    return np.ascontiguousarray(u.reshape(36, w.shape[0], w.shape[1]), dtype=w.dtype)


def winograd_conv(x: np.ndarray, u: np.ndarray, b: np.ndarray | None, begin: Sequence[int],
                  end: Sequence[int], epilogue: Epilogue | None, tuning: NumpyTuning = DEFAULT_TUNING) -> np.ndarray:
    """The convolution of ``x`` (N, C, H, W) with the transformed kernels ``u`` (36, K, C) (see
    ``transform_weights``), plus bias ``b``, then ``epilogue(view, index)`` in place on the output
    ``y[index]``; pads ``begin``/``end`` as ONNX's; units of ``tuning.winograd_unit_tiles`` tiles."""
    n, c, h, wd = x.shape
    k = u.shape[1]
    oh, ow = h + begin[0] + end[0] - 2, wd + begin[1] + end[1] - 2
    th, tw = -(-oh // 4), -(-ow // 4)
    exact = oh == 4 * th and ow == 4 * tw
    # Whole tiles go straight to the output, each unit finished while in cache; otherwise to a
    # larger array whose crop the epilogue then finishes.
    y = np.empty((n, k, 4 * th, 4 * tw), x.dtype)
    job = _Job(x, u, None if b is None else b.reshape(k, 1), epilogue if exact else None, y, tw, begin)
    # The work counted as im2col's multiply-adds: the products are a quarter of them, and the
    # transforms, which are passes over memory, take about as long again.
    macs = 9 * 16 * k * c * n * th * tw
    threads = PRODUCT_THREADS.threads
    per_image = th * tw
    unit_tiles = tuning.winograd_unit_tiles
    if n < threads and per_image >= threads * unit_tiles:  # bands of tile rows of one image
        bands = min(threads, th)
        rows = -(-th // bands)
        units = [(slice(0, 1), band * rows, min(th, band * rows + rows)) for band in range(bands)]
    else:  # runs of whole images
        run = -(-unit_tiles // per_image)
        units = [(slice(i, min(n, i + run)), 0, th) for i in range(0, n, run)]
    if len(units) < 2 or not parallel_for(len(units), lambda i: job.run(*units[i], 0), macs):
        job.run(slice(None), 0, th, macs)
    if exact:
        return y
    out = np.ascontiguousarray(y[:, :, :oh, :ow])
    if epilogue is not None:
        epilogue(out, (slice(None),))
    return out


class _Job:
    """One call's operands; ``run`` computes a unit."""

    def __init__(self, x: np.ndarray, u: np.ndarray, bias: np.ndarray | None, epilogue: Epilogue | None,
                 y: np.ndarray, tw: int, begin: Sequence[int]) -> None:
        self.x, self.u, self.bias, self.epilogue, self.y, self.tw, self.begin = x, u, bias, epilogue, y, tw, begin

    def run(self, images: slice, r0: int, r1: int, split_macs: int) -> None:
        """Output tile rows r0 .. r1 of ``images``: transform the input tiles, make the 36 products
        (shared over the product threads when ``split_macs`` is worth it), transform back, then add
        the bias and run the epilogue."""
        x, u, y, tw = self.x, self.u, self.y, self.tw
        xs = x[images]
        n, c = xs.shape[:2]
        k = u.shape[1]
        tb = r1 - r0
        tiles = n * tb * tw
        s = _Scratch(x.dtype, n, c, k, tb, tw, x.shape[2], x.shape[3], r0, self.begin)
        bt, at = _BT, _AT
        np.copyto(s.interior, xs[:, :, s.rows[0]:s.rows[1]].transpose(1, 0, 2, 3))
        # d[i, j, c, tile] = the tile's value at (i, j); e = B^T d (rows), v = e B (columns)
        np.copyto(s.d, s.windows)
        np.matmul(bt, s.d.reshape(6, -1), out=s.e.reshape(6, -1))
        np.matmul(bt, s.e, out=s.d.reshape(6, 6, -1))  # v into d's scratch, one product per row a
        v = s.d.reshape(36, c, tiles)
        m = s.m

        def products(j: int) -> None:
            for p in range(6 * j, 6 * j + 6):
                np.matmul(u[p], v[p], out=m[p])

        if not (split_macs and parallel_for(6, products, split_macs)):
            np.matmul(u, v, out=m)
        if self.bias is not None:
            # A^T E A is all ones for E = e1 e1^T (A^T's second column is ones), so the bias goes
            # on the product at (1, 1): a pass over 1/36 of m instead of one over the output.
            m[7] += self.bias
        # back: f = A^T m (rows), then o[r] = f[r]^T A (columns; BLAS reads the transposed f[r]),
        # which gives o as (4 rows r, K, n, tb, tw, 4 columns s): each output row r of a tile is a
        # run of 4 * tw values, so the copy out moves whole runs.
        f = s.f.reshape(4, 6, k * tiles)
        np.matmul(at, m.reshape(6, -1), out=f.reshape(4, -1))
        o = s.out.reshape(4, k * tiles, 4)
        np.matmul(f.transpose(0, 2, 1), at.T, out=o)
        # o[r] holds output row r of every tile: the unit's output rows 4 p + r, seen as (p, r), take
        # all four in one copy (few numpy calls: with both product threads busy each call can wait
        # for the GIL)
        rows = o.reshape(4, k, n, tb, 4 * tw).transpose(2, 1, 3, 0, 4)
        index = (images, slice(None), slice(4 * r0, 4 * r1))
        dst = y[index].reshape(rows.shape)
        copy_out = getattr(self.epilogue, "copy_out", None)
        if copy_out is not None:  # the epilogue's first pass is the copy
            copy_out(rows, dst, index)
        else:
            np.copyto(dst, rows)
            if self.epilogue is not None:
                self.epilogue(y[index], index)


class _Scratch:
    """A unit's buffers, cut from this thread's scratch: the padded input rows (zero borders written
    each call), the 6x6 tile view over them, and the transform domain's arrays."""

    def __init__(self, dtype: np.dtype, n: int, c: int, k: int, tb: int, tw: int, h: int, wd: int,
                 r0: int, begin: Sequence[int]) -> None:
        hp, wp = 4 * tb + 2, 4 * tw + 2
        tiles = n * tb * tw
        shapes = {"padded": (c, n, hp, wp), "d": (6, 6, c, n, tb, tw), "e": (6, 6, c * tiles),
                  "m": (36, k, tiles), "f": (4, 6, k * tiles), "out": (4, k * tiles, 4)}
        buf = _SCRATCH.get(dtype, sum(math.prod(v) for v in shapes.values()))
        views, at = {}, 0
        for name, shape in shapes.items():
            size = math.prod(shape)
            views[name] = buf[at:at + size].reshape(shape)
            at += size
        padded = views["padded"]
        self.d, self.e, self.m, self.f, self.out = views["d"], views["e"], views["m"], views["f"], views["out"]
        # padded row q of the unit is input row 4 * r0 + q - begin[0]
        lo, hi = max(0, 4 * r0 - begin[0]), min(h, 4 * r0 + hp - begin[0])
        top, left = lo - (4 * r0 - begin[0]), begin[1]
        self.rows = (lo, hi)
        self.interior = padded[:, :, top:top + hi - lo, left:left + wd]  # wp >= wd + left: pads are >= 0
        padded[:, :, :top] = 0
        padded[:, :, top + hi - lo:] = 0
        padded[:, :, top:top + hi - lo, :left] = 0
        padded[:, :, top:top + hi - lo, left + wd:] = 0
        st = padded.strides
        self.windows = strided_view(padded, (6, 6, c, n, tb, tw), (st[2], st[3], st[0], st[1], 4 * st[2], 4 * st[3]))


#: Scratch of up to this many bytes is kept per thread between calls.
_SCRATCH = ThreadScratch(64 << 20)
