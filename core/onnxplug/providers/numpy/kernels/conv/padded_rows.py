"""Small stride-1 2-D convolutions over padded-width rows, in scratch each thread keeps per shape.

Every output row is computed at the padded width, so each window of a channel is one contiguous
run of the flat padded plane: the im2col copy moves long runs, and the product's extra columns are
dropped in the copy out. With enough channels the im2col gives way to one accumulating product per
kernel row (``row_products``).
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Sequence

import numpy as np

from onnxplug.providers.numpy.runtime import blas
from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS, matmul
from onnxplug.providers.numpy.kernels.conv import row_products as _row_products
from onnxplug.providers.numpy.kernels.conv.depthwise import Epilogue
from onnxplug.providers.numpy.kernels.conv.row_products import RowProductsScratch, row_products
from onnxplug.providers.numpy.runtime.scratch import SCRATCH_KEEP_SHAPE_BYTES, keep, kept_scratch
from onnxplug.providers.numpy.runtime.tuning import DEFAULT_TUNING, NumpyTuning
from onnxplug.providers.numpy.kernels.conv.strided import strided_view

if TYPE_CHECKING:
    from onnxplug.providers.numpy.kernels.conv.dispatch import BiasedWeights

#: Widest padded row, relative to the output row, that conv_padded_rows takes: its product
#: also computes (then drops) the padded row's extra columns.
PADDED_ROWS_MAX_WIDENING = 1.25
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_SCRATCH = threading.local()


def padded_rows_fit(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides: Sequence[int],
                     dilations: Sequence[int], begin: Sequence[int], end: Sequence[int]) -> bool:
    """Whether conv_padded_rows takes this convolution: 2-D, stride 1, no cropping pads, one float
    dtype, not 1x1, a product small enough to run on one thread, rows not much wider than the output."""
    if x.ndim != 4 or strides[0] != 1 or strides[1] != 1:
        return False
    dtype = x.dtype
    if dtype not in _DTYPES or w.dtype != dtype or (b is not None and b.dtype != dtype):
        return False
    if min(begin) < 0 or min(end) < 0:
        return False
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    wp = wd + begin[1] + end[1]
    oh = h + begin[0] + end[0] - (kh - 1) * dilations[0]
    ow = wp - (kw - 1) * dilations[1]
    if (kh == 1 and kw == 1) or n == 0 or c == 0 or m == 0 or oh <= 0 or ow <= 0:
        return False
    return wp <= PADDED_ROWS_MAX_WIDENING * ow and n * m * cg * kh * kw * oh * ow < PRODUCT_THREADS.split_product_macs


def _takes_threaded_product(x: np.ndarray, w: np.ndarray, begin: Sequence[int], end: Sequence[int],
                            dilations: Sequence[int]) -> bool:
    """Whether a padded-rows convolution of several images in one group makes one product large
    enough for the threaded BLAS."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    positions = n * (h + begin[0] + end[0] - (kh - 1) * dilations[0]) * (wd + begin[1] + end[1])
    return n > 1 and cg == c and blas.takes_threaded_blas(m * (c * kh * kw + 1) * positions)


class _RowsScratch:
    """One shape's scratch for conv_padded_rows: zero-bordered padded images (borders written once),
    the window view over them, the columns it is copied into (with a row of ones per group under a
    bias), the product over padded-width rows, and the view of it that is the output."""

    __slots__ = ("interior", "windows", "columns", "taps", "product", "result", "wide", "nbytes")

    def __init__(self, dtype: np.dtype, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                 dilations: Sequence[int], begin: Sequence[int], end: Sequence[int], group: int,
                 bias: bool, wide: bool) -> None:
        n, c, h, wd = x_shape
        m, cg, kh, kw = w_shape
        dh, dw = dilations
        hp, wp = h + begin[0] + end[0], wd + begin[1] + end[1]
        oh, ow = hp - (kh - 1) * dh, wp - (kw - 1) * dw
        plane = hp * wp
        p = oh * wp  # output rows at the padded width
        taps = cg * kh * kw
        # The last channel's windows read (kw - 1) * dw elements past its plane: only into the
        # dropped columns of the last rows, so zeros there are enough.
        padded = np.zeros(n * c * plane + (kw - 1) * dw, dtype)
        self.interior = padded[:n * c * plane].reshape(n, c, hp, wp)[:, :, begin[0]:begin[0] + h,
                                                                      begin[1]:begin[1] + wd]
        it = padded.itemsize
        # Window (kh, kw) of channel c of image i is one run of p elements of the flat padded
        # planes. Columns are (N, group, taps, P), one product per image; or, ``wide``, the
        # images side by side, (group, taps, N * P), one product for the batch, which the threaded
        # BLAS takes (on one thread per-image products are faster).
        if wide:
            lead, lead_strides, inner, inner_strides = (group,), (cg * plane * it,), (n, p), (c * plane * it, it)
        else:
            lead, lead_strides, inner, inner_strides = (n, group), (c * plane * it, cg * plane * it), (p,), (it,)
        self.windows = strided_view(padded, lead + (cg, kh, kw) + inner,
                                    lead_strides + (plane * it, dh * wp * it, dw * it) + inner_strides)
        positions = math.prod(inner)
        self.columns = np.empty(lead + (taps + bias, positions), dtype)
        if bias:
            self.columns[..., taps, :] = 1
        self.taps = self.columns[..., :taps, :]
        self.taps.shape = lead + (cg, kh, kw) + inner  # a view (raises rather than copy)
        self.product = np.empty(lead + (m // group, positions), dtype)
        if wide:
            self.result = self.product.reshape(m, n, oh, wp).transpose(1, 0, 2, 3)[:, :, :, :ow]
        else:
            self.result = self.product.reshape(n, m, oh, wp)[:, :, :, :ow]
        self.wide = wide
        self.nbytes = padded.nbytes + self.columns.nbytes + self.product.nbytes


def padded_rows_scratch(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides: Sequence[int],
                        dilations: Sequence[int], begin: Sequence[int], end: Sequence[int],
                        group: int, tuning: NumpyTuning = DEFAULT_TUNING) -> _RowsScratch | RowProductsScratch | None:
    """This thread's scratch for the convolution when conv_padded_rows takes it, else None.

    Both the scratch (when small) and the refusals are kept per thread and shape, so a repeated
    call costs one dictionary look-up instead of the fit test and the scratch's views.
    """
    kept = kept_scratch(_SCRATCH)
    key = (x.dtype, x.shape, w.dtype, w.shape, None if b is None else b.dtype, tuple(strides),
           tuple(dilations), tuple(begin), tuple(end), group, PADDED_ROWS_MAX_WIDENING, PRODUCT_THREADS.split_product_macs,
           PRODUCT_THREADS.threaded_product_macs, PRODUCT_THREADS.threads, tuning.row_products, _row_products.MIN_CHANNELS)
    scratch = kept.get(key, False)
    if scratch is False:
        scratch = None
        if padded_rows_fit(x, w, b, strides, dilations, begin, end):
            if _row_products.row_products_fit(x, w, group, tuning):
                scratch = RowProductsScratch(x.dtype, x.shape, w.shape, dilations, begin, end, b is not None)
            else:
                scratch = _RowsScratch(x.dtype, x.shape, w.shape, dilations, begin, end, group, b is not None,
                                       _takes_threaded_product(x, w, begin, end, dilations))
            if scratch.nbytes > SCRATCH_KEEP_SHAPE_BYTES:
                return scratch
        keep(kept, key, scratch, 0 if scratch is None else scratch.nbytes)
    return scratch


def conv_padded_rows(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, scratch: _RowsScratch | RowProductsScratch,
                     group: int, epilogue: Epilogue | None, weights: BiasedWeights) -> np.ndarray:
    """A stride-1 2-D convolution as im2col over padded-width rows, then one (batched) matmul.

    Output row ``r`` is computed at the padded width ``wp``: then window (kh, kw) of a channel is
    one contiguous run of the flat padded plane, from ``kh * dh * wp + kw * dw``, so the im2col
    copy moves long runs (the strided-window one moves runs of one output row), and the product's extra ``wp - ow`` columns of each row are dropped when the
    result is copied out. A bias ``b`` goes in the weights as one more column (``weights`` keeps
    them), against a row of ones in the columns: the product adds it. ``scratch``
    (padded images with zero borders, columns, product; see padded_rows_scratch) is kept per
    thread and shape, so a call writes the image interior, copies the windows, multiplies and
    copies out.

    The copies run on the calling thread (splitting them across the product threads loses to the
    hand-off and the copies competing); the product covers all images at once, so a large one takes the threaded BLAS.
    With enough channels, a RowProductsScratch replaces the im2col by one product per kernel row
    (see row_products).
    """
    if isinstance(scratch, RowProductsScratch):
        result = row_products(x, weights.row_products(w, b), scratch)
    else:
        m = w.shape[0]
        np.copyto(scratch.interior, x)
        np.copyto(scratch.taps, scratch.windows)
        wm = w.reshape(group, m // group, -1) if b is None else weights.get(w, b, group)
        if scratch.wide:
            matmul(wm, scratch.columns, out=scratch.product)
        else:
            np.matmul(wm, scratch.columns, out=scratch.product)
        result = scratch.result
    y = np.empty(result.shape, x.dtype)
    copy_out = getattr(epilogue, "copy_out", None)
    if copy_out is not None:  # copy and epilogue in one pass where the epilogue can
        copy_out(result, y, _WHOLE)
    else:
        np.copyto(y, result)
        if epilogue is not None:
            epilogue(y, _WHOLE)
    return y


_WHOLE = (slice(None),)
