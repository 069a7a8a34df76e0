"""Small stride-1 2-D convolutions as one accumulating product per kernel row.

The padded-rows path (``padded_rows.conv_padded_rows``) computes every output row at the padded
width ``wp``, so a shift by ``i`` kernel rows is a shift by ``i * dh * wp`` along the flattened
padded planes. Here the padded planes of the batch lie channel-major, (C, N * hp * wp), and only the
``kw`` column shifts are copied, as the rows of ``columns`` (kw * C [+ a row of ones for the bias],
L); kernel row ``i`` reads ``columns`` in place from column ``i * dh * wp`` on, and the ``kh``
products accumulate into one (M, L) product with beta = 1, so the copy is ``kw * C`` rows instead of
``kh * kw * C``. numpy's matmul cannot accumulate, so this needs the threaded BLAS
(``blas.gemm_into``); with few channels the im2col copy is cheap and its single product the faster
one, hence ``MIN_CHANNELS``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from onnxplug.providers.numpy.runtime import blas
from onnxplug.providers.numpy.runtime.threaded_blas import threaded_blas
from onnxplug.providers.numpy.runtime.tuning import DEFAULT_TUNING, NumpyTuning

#: Fewest input channels: below, the im2col copy costs less than the extra passes over the product.
MIN_CHANNELS = 16
#: Fewest multiply-adds (at the input's size): below, the kh calls into the threaded BLAS cost more
#: than the im2col copy they save.
MIN_MACS = 2_000_000


def row_products_fit(x: np.ndarray, w: np.ndarray, group: int, tuning: NumpyTuning = DEFAULT_TUNING) -> bool:
    """Whether a convolution the padded-rows path takes (see ``padded_rows.padded_rows_fit``) goes
    to ``row_products``: switched on (``tuning.row_products``; off, the padded-rows im2col), one
    group, enough channels and work, the threaded BLAS loaded."""
    return (tuning.row_products and group == 1 and x.shape[1] >= MIN_CHANNELS
            and x.size * w.shape[0] * w[0, 0].size >= MIN_MACS and threaded_blas() is not None)


def row_products_weights(w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """The kernel (M, C, kh, kw) as one matrix per kernel row, (kh, M, kw * C), the columns ordered
    (kernel column, channel) like the copied rows; with a bias, one more column, which only row 0's
    product uses (the others take a view without it)."""
    m, c, kh, kw = w.shape
    out = np.zeros((kh, m, kw * c + (b is not None)), w.dtype)
    out[:, :, :kw * c] = w.transpose(2, 0, 3, 1).reshape(kh, m, kw * c)
    if b is not None:
        out[0, :, kw * c] = b
    return out


class RowProductsScratch:
    """One shape's scratch: the zero-bordered padded planes (borders written once), the copies of
    their column shifts, the product, and the views each call uses."""

    __slots__ = ("interior", "shifts", "sources", "product", "result", "nbytes")

    def __init__(self, dtype: np.dtype, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                 dilations: Sequence[int], begin: Sequence[int], end: Sequence[int], bias: bool) -> None:
        n, c, h, wd = x_shape
        m, _, kh, kw = w_shape
        dh, dw = dilations
        hp, wp = h + begin[0] + end[0], wd + begin[1] + end[1]
        oh, ow = hp - (kh - 1) * dh, wp - (kw - 1) * dw
        total = n * hp * wp
        # A shift reads up to (kw - 1) * dw elements past the last plane: only for dropped columns.
        padded = np.zeros((c, total + (kw - 1) * dw), dtype)
        planes = padded[:, :total].reshape(c, n, hp, wp)
        self.interior = planes[:, :, begin[0]:begin[0] + h, begin[1]:begin[1] + wd].transpose(1, 0, 2, 3)
        taps = kw * c
        columns = np.empty((taps + bias, total), dtype)
        if bias:
            columns[taps] = 1
        self.shifts = [(columns[j * c:(j + 1) * c], padded[:, j * dw:j * dw + total]) for j in range(kw)]
        # Output position q (image, row, column at the padded width) of kernel row i reads column
        # q + i * dh * wp; the last image's last output row ends inside its plane.
        span = total - (kh - 1) * dh * wp
        self.sources = [columns[:taps + (bias and i == 0), i * dh * wp:i * dh * wp + span] for i in range(kh)]
        self.product = np.empty((m, total), dtype)
        self.result = self.product.reshape(m, n, hp, wp)[:, :, :oh, :ow].transpose(1, 0, 2, 3)
        self.nbytes = padded.nbytes + columns.nbytes + self.product.nbytes


def row_products(x: np.ndarray, weights: np.ndarray, scratch: RowProductsScratch) -> np.ndarray:
    """The convolution of ``x`` with ``weights`` from ``row_products_weights`` (with the bias when
    ``scratch`` was made for one), as a view (N, M, oh, ow) of the scratch's product."""
    np.copyto(scratch.interior, x)
    for dst, src in scratch.shifts:
        np.copyto(dst, src)
    out = scratch.product[:, :scratch.sources[0].shape[1]]
    for i, src in enumerate(scratch.sources):
        a = weights[i, :, :src.shape[0]]
        if not blas.gemm_into(a, src, out, accumulate=i > 0):  # only if the library went away
            if i:
                out += a @ src
            else:
                np.matmul(a, src, out=out)
    return scratch.result
