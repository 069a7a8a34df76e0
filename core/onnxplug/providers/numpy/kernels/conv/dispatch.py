"""Convolution arithmetic shared by Conv, ConvTranspose, ConvInteger, QLinearConv and Col2Im.

Conv is computed in one of six vectorised ways, all BLAS-backed or elementwise: 1x1 kernels as a
plain (batched) matmul; depthwise ones as sums of shifted rows in cache-sized blocks (depthwise);
large float32 3x3 stride-1 ones with Winograd's F(4x4, 3x3) (winograd); small stride-1 2-D ones by
im2col over padded-width rows (padded_rows) or, with 16 or more channels, one accumulating product
per kernel row (row_products); everything else by im2col from a strided window view and one batched
matmul. Where it costs less than a pass over the output, the product adds the bias (one more weight
column against a row of ones), since numpy adds a broadcast operand, or takes a maximum against a
scalar, far slower than against a full array (hence also ``zeros_operand``).
"""

from __future__ import annotations

import math
import threading
from typing import Callable, Sequence

import numpy as np
from onnxplug.geometry import resolve_pads
from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS, matmul, parallel_for
from onnxplug.providers.numpy.kernels.conv import padded_rows
from onnxplug.providers.numpy.kernels.conv.depthwise import Epilogue, depthwise_conv
from onnxplug.providers.numpy.kernels.conv.row_products import row_products_weights
from onnxplug.providers.numpy.runtime.scratch import SCRATCH_KEEP_SHAPE_BYTES, keep, kept_scratch
from onnxplug.providers.numpy.kernels.conv.strided import strided_view
from onnxplug.providers.numpy.kernels.conv.winograd import transform_weights, winograd_conv, winograd_fits
from onnxplug.providers.numpy.runtime.tuning import DEFAULT_TUNING, NumpyTuning


def conv_pads(node_attr, in_spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int]) -> tuple[list[int], list[int]]:
    """(pads_begin, pads_end) of a Conv-like node from ``auto_pad`` and ``pads`` (``onnxplug.geometry``)."""
    begin, end = resolve_pads(node_attr("auto_pad", "NOTSET"), in_spatial, kernel, strides, dilations,
                              node_attr("pads", None))
    return list(begin), list(end)


def spatial_attrs(node_attr, kernel: Sequence[int]) -> tuple[list[int], list[int]]:
    """(strides, dilations), defaulting to ones."""
    nd = len(kernel)
    strides = [int(s) for s in (node_attr("strides", None) or [1] * nd)]
    dilations = [int(d) for d in (node_attr("dilations", None) or [1] * nd)]
    return strides, dilations


_ZEROS: dict[np.dtype, np.ndarray] = {}
_ZERO_VIEWS: dict[tuple, np.ndarray] = {}


def zeros_operand(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A read-only C-contiguous array of zeros of ``shape``, cut from a buffer kept per dtype: an
    operand for ``np.maximum`` that keeps numpy on its fast array-array loop (against a scalar it
    takes a slower one). Views are kept per shape (a look-up is cheaper than cutting one)."""
    key = (shape, dtype)
    view = _ZERO_VIEWS.get(key)
    if view is None:
        size = math.prod(shape)
        buf = _ZEROS.get(dtype)
        if buf is None or buf.size < size:
            buf = np.zeros(max(size, 1 << 12), dtype)
            buf.flags.writeable = False
            _ZEROS[dtype] = buf  # a racing thread may replace it: either buffer is all zeros
        view = buf[:size].reshape(shape)
        if len(_ZERO_VIEWS) >= 256:
            _ZERO_VIEWS.clear()
        _ZERO_VIEWS[key] = view
    return view


class ConvAttributes:
    """A Conv-like node's geometry attributes, read once when its kernel is made; ``resolve`` gives
    (strides, dilations, pads_begin, pads_end) for an input, kept per input and kernel shape (the
    per-call attribute reads and pad arithmetic cost as much as a small conv's copies)."""

    _KEEP_SHAPES = 16

    def __init__(self, node_attr) -> None:
        self._node_attr = node_attr
        kernel = node_attr("kernel_shape", None)
        self.kernel_shape: list[int] | None = None if kernel is None else [int(k) for k in kernel]
        self.group = int(node_attr("group", 1))
        self._resolved: dict[tuple, tuple[tuple[int, ...], ...]] = {}

    def resolve(self, in_spatial: Sequence[int], kernel: Sequence[int]) -> tuple[tuple[int, ...], ...]:
        """(strides, dilations, pads_begin, pads_end) for spatial input ``in_spatial`` and ``kernel``
        (the kernel_shape attribute wins over the weight's when present); tuples, as they are shared."""
        key = (tuple(in_spatial), tuple(kernel))
        found = self._resolved.get(key)
        if found is None:
            kernel = self.kernel_shape or list(kernel)
            strides, dilations = spatial_attrs(self._node_attr, kernel)
            begin, end = conv_pads(self._node_attr, in_spatial, kernel, strides, dilations)
            found = (tuple(strides), tuple(dilations), tuple(begin), tuple(end))
            if len(self._resolved) >= self._KEEP_SHAPES:
                self._resolved.clear()
            self._resolved[key] = found
        return found


def constant_inputs(node, context, indices: Sequence[int]) -> bool:
    """Whether the node's inputs at ``indices`` that are given are all constant initializers of the
    session (feeds cannot override them, so their arrays are the same every run). An absent
    optional input (a Conv without a bias) is as constant as one: it is absent every run."""
    names = node.inputs
    return all(i >= len(names) or not names[i] or names[i] in context.constants for i in indices)


class BiasedWeights:
    """A conv kernel's weights with its bias as one more column, (group, M / group, taps + 1), for
    the products that add the bias against a row of ones in the columns. Kept across calls when
    the kernel's W and B are constant initializers (a session passes the same arrays every run):
    rebuilding costs a copy of the weights."""

    def __init__(self, constant: bool) -> None:
        self.constant = constant
        self._kept: tuple[np.ndarray, np.ndarray, int, np.ndarray] | None = None
        self._winograd: tuple[np.ndarray, np.ndarray] | None = None
        self._rows: tuple[np.ndarray, np.ndarray | None, np.ndarray] | None = None

    def winograd(self, w: np.ndarray) -> np.ndarray:
        """The kernels in Winograd's transform domain (see winograd.transform_weights), kept like
        the biased weights."""
        kept = self._winograd
        if kept is not None and kept[0] is w:
            return kept[1]
        u = transform_weights(w)
        if self.constant:
            self._winograd = (w, u)
        return u

    def row_products(self, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        """The kernel as one matrix per kernel row (see row_products.row_products_weights), kept alike."""
        kept = self._rows
        if kept is not None and kept[0] is w and kept[1] is b:
            return kept[2]
        rows = row_products_weights(w, b)
        if self.constant:
            self._rows = (w, b, rows)
        return rows

    def holds(self, w: np.ndarray, b: np.ndarray, group: int) -> bool:
        """Whether ``get(w, b, group)`` is kept (no copy)."""
        kept = self._kept
        return kept is not None and kept[0] is w and kept[1] is b and kept[2] == group

    def get(self, w: np.ndarray, b: np.ndarray, group: int) -> np.ndarray:
        """The weights (group, M / group, taps + 1) with ``b`` as their last column."""
        if self.holds(w, b, group):
            return self._kept[3]  # type: ignore[index]
        m = w.shape[0]
        wm = np.concatenate((w.reshape(group, m // group, -1), b.reshape(group, m // group, 1)), axis=2)
        if self.constant:
            self._kept = (w, b, group, wm)  # one assignment: threads see the old or the new entry
        return wm


def pad_spatial(x: np.ndarray, begin: Sequence[int], end: Sequence[int], value=0) -> np.ndarray:
    """``x`` with its trailing spatial axes padded by ``value`` (negative pads crop); no copy if no pads."""
    if not any(begin) and not any(end):
        return x
    nd = len(begin)
    lead = x.ndim - nd
    crop = tuple([slice(None)] * lead + [slice(max(0, -b), x.shape[lead + i] - max(0, -e))
                                         for i, (b, e) in enumerate(zip(begin, end))])
    x = x[crop]
    begin = [max(0, b) for b in begin]
    end = [max(0, e) for e in end]
    shape = list(x.shape[:lead]) + [x.shape[lead + i] + begin[i] + end[i] for i in range(nd)]
    out = np.full(shape, value, dtype=x.dtype) if value != 0 else np.zeros(shape, dtype=x.dtype)
    inner = tuple([slice(None)] * lead + [slice(begin[i], begin[i] + x.shape[lead + i]) for i in range(nd)])
    out[inner] = x
    return out


def windows(xp: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
            dilations: Sequence[int]) -> np.ndarray:
    """View of shape (*lead, *out_spatial, *kernel) over the trailing spatial axes of ``xp``."""
    nd = len(kernel)
    lead = xp.ndim - nd
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    out = [(xp.shape[lead + i] - span[i]) // strides[i] + 1 for i in range(nd)]
    if min(out, default=1) <= 0:
        return np.zeros(xp.shape[:lead] + tuple(max(o, 0) for o in out) + tuple(kernel), xp.dtype)
    st = xp.strides
    shape = xp.shape[:lead] + tuple(out) + tuple(kernel)
    strides = st[:lead] + tuple(st[lead + i] * strides[i] for i in range(nd)) + \
        tuple(st[lead + i] * dilations[i] for i in range(nd))
    return strided_view(xp, shape, strides)


def im2col(xp: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
           group: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Columns of shape (N, group, C/group * prod(kernel), prod(out)) and the output spatial shape."""
    nd = len(kernel)
    n, c = xp.shape[:2]
    win = windows(xp, kernel, strides, dilations)  # (N, C, *out, *k)
    out_sp = win.shape[2:2 + nd]
    perm = (0, 1, *range(2 + nd, 2 + 2 * nd), *range(2, 2 + nd))
    cols = np.ascontiguousarray(win.transpose(perm))
    return cols.reshape(n, group, (c // group) * int(math.prod(kernel)), int(math.prod(out_sp))), out_sp


def conv_nd(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides: Sequence[int],
            dilations: Sequence[int], begin: Sequence[int], end: Sequence[int], group: int,
            epilogue: Epilogue | None = None, weights: BiasedWeights | None = None,
            tuning: NumpyTuning = DEFAULT_TUNING) -> np.ndarray:
    """N-D convolution (ONNX Conv semantics) of float arrays; keeps the input dtype. ``tuning``
    (the provider options) switches strategies on and off.

    ``epilogue(view, index)`` runs in place on the biased output. Where the work goes in units (an
    image, a band of rows, a block of channels), bias and epilogue run on each unit's output right
    after it is computed, while it is still in cache. An epilogue with a ``copy_out(src, dst, index)``
    method is given the chance to write ``dst`` from a result in scratch in the same pass.
    ``weights`` keeps the kernel's weights with the bias column across calls (see BiasedWeights).
    """
    n, c = x.shape[:2]
    m = w.shape[0]
    kernel = w.shape[2:]
    if w.shape[1] * group != c:
        raise ValueError(f"Conv: input has {c} channels but weight expects {w.shape[1]} x group {group}")
    if m % group:
        raise ValueError(f"Conv: {m} output channels are not divisible by group {group}")
    if n == 0:  # an empty batch: the paths below share the work out by image
        out_sp = [(size + lo + hi - d * (k - 1) - 1) // s + 1
                  for size, lo, hi, d, k, s in zip(x.shape[2:], begin, end, dilations, kernel, strides)]
        return np.zeros((n, m, *(max(o, 0) for o in out_sp)), x.dtype)
    # one input channel (group 1) is an ordinary conv: its windows make one matmul, where the
    # depthwise formulations work per stride phase and per output channel of the multiplier
    if w.shape[1] == 1 and group == c > 1 and any(k != 1 for k in kernel):
        return depthwise_conv(x, w, b, strides, dilations, begin, end, epilogue, tuning)
    if winograd_fits(x, w, b, strides, dilations, begin, end, group, tuning):
        return winograd_conv(x, (weights or BiasedWeights(False)).winograd(w), b, begin, end, epilogue, tuning)
    rows = None
    if tuning.padded_rows:  # off: the strided-window im2col below
        rows = padded_rows.padded_rows_scratch(x, w, b, strides, dilations, begin, end, group, tuning)
    if rows is not None:
        return padded_rows.conv_padded_rows(x, w, b, rows, group, epilogue, weights or BiasedWeights(False))
    xp = pad_spatial(x, begin, end)
    if all(k == 1 for k in kernel):
        return _conv_1x1(xp, w, b, strides, group, epilogue, weights, tuning.im2col_bias_row)
    return _conv_im2col(xp, w, b, kernel, strides, dilations, group, epilogue, weights, tuning)


#: Adds the bias to, then runs the epilogue on, ``view`` = ``y[index]`` of the (N, M, *out) output.
Finish = Callable[[np.ndarray, tuple], None]


def _finisher(b: np.ndarray | None, epilogue: Epilogue | None, nd: int) -> Finish | None:
    if b is None and epilogue is None:
        return None
    column = None if b is None else b.reshape((-1,) + (1,) * nd)

    def finish(view: np.ndarray, index: tuple) -> None:
        if column is not None:
            view += column
        if epilogue is not None:
            epilogue(view, index)

    return finish


# An im2col convolution whose columns for one image take at least 4x ``tuning.im2col_band_bytes``
# goes in bands of output rows whose columns take about that much, so that they stay in a core's
# L2 cache from the copy to the product. Below 4x, bands cost more than they save.


def _conv_im2col(xp: np.ndarray, w: np.ndarray, b: np.ndarray | None, kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int], group: int,
                 epilogue: Epilogue | None, weights: BiasedWeights | None, tuning: NumpyTuning) -> np.ndarray:
    """im2col + one matmul per group. With ``tuning.im2col_bias_row`` the bias is added by the
    matmul, as one more weight column against a row of ones, when the weights with it are kept or
    cost no more to build than a bias pass over the output (numpy's add against a broadcast operand
    runs slower than against a full one). Large convolutions go in units of one image (or a band of
    output rows, when there are fewer images than threads or an image's columns are large, see
    ``tuning.im2col_band_bytes``) on each product thread, so the column copy runs in parallel too
    and its buffer stays small."""
    n, m, nd = xp.shape[0], w.shape[0], len(kernel)
    mg, cg = m // group, w.shape[1]
    taps = cg * int(math.prod(kernel))
    win = windows(xp, kernel, strides, dilations)  # (N, C, *out, *k)
    out_sp = win.shape[2:2 + nd]
    weights = weights or BiasedWeights(False)
    bias_row = tuning.im2col_bias_row
    if b is not None and bias_row and (weights.holds(w, b, group) or w.size <= n * m * math.prod(out_sp)):
        wm = weights.get(w, b, group)
        finish = _finisher(None, epilogue, nd)
    else:
        wm = w.reshape(group, mg, taps)
        finish = _finisher(b, epilogue, nd)
        b = None
    y = np.empty((n, group, mg, int(math.prod(out_sp))), dtype=np.result_type(xp.dtype, w.dtype))
    shaped = y.reshape((n, m) + tuple(out_sp))
    perm = (0, 1, *range(2 + nd, 2 + 2 * nd), *range(2, 2 + nd))
    inner = int(math.prod(out_sp[1:]))
    bands = min(max(1, -(-PRODUCT_THREADS.threads // n)), out_sp[0]) if out_sp[0] else 1
    image_columns = (taps + 1) * int(math.prod(out_sp)) * xp.itemsize * group
    band_bytes = tuning.im2col_band_bytes
    if out_sp[0] and image_columns >= 4 * band_bytes:
        bands = min(out_sp[0], max(bands, -(-image_columns // band_bytes)))
    rows = -(-out_sp[0] // bands) if out_sp[0] else 0

    def columns(src: np.ndarray) -> np.ndarray:
        """Windows (n', C, *kernel, *out) as columns (n', G, taps [+ 1 row of ones], positions)."""
        count, positions = src.shape[0], int(math.prod(src.shape[2 + nd:]))
        if b is None:
            return np.ascontiguousarray(src).reshape(count, group, taps, positions)
        cols = np.empty((count, group, taps + 1, positions), y.dtype)
        cols[:, :, taps] = 1
        dst = cols[:, :, :taps]
        dst.shape = (count, group, cg) + src.shape[2:]  # a view (raises rather than copy)
        np.copyto(dst, src.reshape((count, group, cg) + src.shape[2:]))
        return cols

    def unit(u: int) -> None:
        i, band = divmod(u, bands)
        r0, r1 = band * rows, min(band * rows + rows, out_sp[0])
        if r0 < r1:
            cols = columns(win[i:i + 1, :, r0:r1].transpose(perm))
            np.matmul(wm, cols[0], out=y[i, :, :, r0 * inner:r1 * inner])
            if finish is not None:
                index = (i, slice(None), slice(r0, r1))
                finish(shaped[index], index)

    # Fewer images than threads and weights more than twice the columns (ResNet-18's layer4 at
    # batch 1: 512 x 4608 weights, 4608 x 49 columns):
    # bands of positions would each pack all the weights, so split the product by weight rows.
    by_weight_rows = n < PRODUCT_THREADS.threads and mg > 2 * int(math.prod(out_sp))
    if by_weight_rows or not parallel_for(n * bands, unit, y.size * taps):
        matmul(wm, columns(win.transpose(perm)), out=y)
        if finish is not None:
            finish(shaped, (slice(None),))
    return shaped


#: 1x1 convolutions with a bias and at most this many input channels per output channel put the
#: bias in the product: the input is copied into columns under a row of ones (a copy of C x P
#: values instead of a slower pass adding a broadcast column to the M x P output).
ONE_BY_ONE_BIAS_ROW_MAX_RATIO = 1.0
_ONES_ROW_SCRATCH = threading.local()


def _ones_row_columns(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """This thread's columns (N, G, rows + 1, P) whose last row of each group is ones (written
    when made); kept per shape when small."""
    kept = kept_scratch(_ONES_ROW_SCRATCH)
    cols = kept.get((dtype, shape))
    if cols is None:
        cols = np.empty(shape, dtype)
        cols[:, :, -1] = 1
        if cols.nbytes <= SCRATCH_KEEP_SHAPE_BYTES:
            keep(kept, (dtype, shape), cols, cols.nbytes)
    return cols


def _conv_1x1(xp: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides: Sequence[int], group: int,
              epilogue: Epilogue | None, weights: BiasedWeights | None, bias_row: bool) -> np.ndarray:
    """A (grouped) matmul over the flattened spatial axes; with several images, one image per
    unit on the product threads, finished while its output is in cache. With few input channels
    per output channel (or a strided input, which needs a copy anyway) the bias is added by the
    product, against a row of ones under a copy of the input."""
    if any(s != 1 for s in strides):
        xp = xp[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    n, c = xp.shape[:2]
    out_sp = xp.shape[2:]
    nd = len(out_sp)
    m = w.shape[0]
    cg, mg = c // group, m // group
    p = int(math.prod(out_sp))
    weights = weights or BiasedWeights(False)
    if (b is not None and bias_row and xp.dtype == w.dtype
            and (cg <= ONE_BY_ONE_BIAS_ROW_MAX_RATIO * mg or not xp.flags.c_contiguous)
            and (weights.holds(w, b, group) or w.size <= n * m * p)):
        wm = weights.get(w, b, group)
        columns = _ones_row_columns(xp.dtype, (n, group, cg + 1, p))
        inputs = columns[:, :, :cg]
        inputs.shape = (n, group, cg) + tuple(out_sp)  # a view (raises rather than copy)
        source = xp.reshape((n, group, cg) + tuple(out_sp))  # a view even when strided
        finish = _finisher(None, epilogue, nd)
    else:
        wm = w.reshape(group, mg, cg)
        columns = xp.reshape(n, group, cg, p)
        inputs = source = None
        finish = _finisher(b, epilogue, nd)
    y = np.empty((n, group, mg, p), dtype=np.result_type(xp.dtype, w.dtype))
    shaped = y.reshape((n, m) + tuple(out_sp))

    def image(i: int) -> None:
        if inputs is not None:
            np.copyto(inputs[i], source[i])
        np.matmul(wm, columns[i], out=y[i])
        if finish is not None:
            finish(shaped[i], (i,))

    if n < 2 or not parallel_for(n, image, y.size * cg):
        if inputs is not None:
            np.copyto(inputs, source)
        matmul(wm, columns, out=y)
        if finish is not None:
            finish(shaped, (slice(None),))
    return shaped


def scatter_cols(cols: np.ndarray, full_sp: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int], in_sp: Sequence[int], offset: Sequence[int] | None = None) -> np.ndarray:
    """col2im: add columns (N, C, *kernel, *in_sp) into an image (N, C, *full_sp), one kernel offset at a time.

    Column position ``p`` of kernel offset ``i`` lands at ``offset + p * stride + i * dilation``.
    """
    n, c = cols.shape[:2]
    offset = offset or [0] * len(kernel)
    out = np.zeros((n, c) + tuple(full_sp), dtype=cols.dtype)
    for idx in np.ndindex(*kernel):
        dst = tuple(slice(o + i * d, o + i * d + (p - 1) * s + 1, s)
                    for o, i, d, p, s in zip(offset, idx, dilations, in_sp, strides))
        out[(slice(None), slice(None)) + dst] += cols[(slice(None), slice(None)) + idx]
    return out


def conv_transpose_nd(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides: Sequence[int],
                      dilations: Sequence[int], begin: Sequence[int], out_sp: Sequence[int],
                      group: int) -> np.ndarray:
    """ConvTranspose: one matmul to columns, then col2im, then a crop of ``begin`` and ``out_sp``."""
    n, c = x.shape[:2]
    in_sp = x.shape[2:]
    kernel = w.shape[2:]
    nd = len(kernel)
    mg = w.shape[1]
    m = mg * group
    if w.shape[0] != c:
        raise ValueError(f"ConvTranspose: input has {c} channels but weight has {w.shape[0]}")
    p = int(math.prod(in_sp))
    kk = int(math.prod(kernel))
    wt = w.reshape(group, c // group, mg * kk).transpose(0, 2, 1)  # (G, Mg*K, Cg)
    cols = matmul(wt, x.reshape(n, group, c // group, p))  # (N, G, Mg*K, P)
    cols = cols.reshape((n, m) + tuple(kernel) + tuple(in_sp))
    full = [(q - 1) * s + (k - 1) * d + 1 for q, s, k, d in zip(in_sp, strides, kernel, dilations)]
    shift = [max(0, -bg) for bg in begin]  # output_shape larger than the full result: zeros first
    need = [max(f + sh, bg + sh + o) for f, bg, o, sh in zip(full, begin, out_sp, shift)]
    img = scatter_cols(cols, need, kernel, strides, dilations, in_sp, shift)
    y = img[(slice(None), slice(None)) + tuple(slice(bg + sh, bg + sh + o)
                                               for bg, sh, o in zip(begin, shift, out_sp))]
    y = np.ascontiguousarray(y)
    if b is not None:
        y += b.reshape((m,) + (1,) * nd)
    return y
