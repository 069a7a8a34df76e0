"""Compiled 2-D max and average pooling over (N*C, H, W), with pads, strides, dilations and ceil_mode.

Window ``o`` starts at ``o * stride - pad_begin``; taps past the end padding are not part of the
window (ceil_mode's extra window), as onnxruntime computes them. Windows are separable. Row kernels:
per output row, the window's input rows combined into a padded line (-inf for max, 0 for sums), then
the line's taps per output column. Flat kernels (small planes, whose rows are too short for
vector loops): all planes padded in one flat buffer, every position's taps combined by long flat
passes. No pass tests bounds, and all vectorise: max uses LLVM's ``maximum`` (NaN if either side
is NaN), not a compare-and-branch. Sums are float64. (A window holding both zeros gives +0;
onnxruntime's own float32 and float64 pools disagree there.)
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit
from numba.extending import intrinsic

MAX, AVERAGE = 0, 1


@intrinsic
def max_nan(typingctx, a, b):  # type: ignore[no-untyped-def]
    """The larger of two floats of one type, NaN if either is NaN (and +0 above -0): LLVM's
    ``maximum``, branch-free, so loops of it vectorise (maxps, a NaN test and a blend on AVX2)."""
    sig = a(a, b)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        ty = args[0].type
        fn = builder.module.declare_intrinsic("llvm.maximum", [ty], ir.FunctionType(ty, [ty, ty]))
        return builder.call(fn, args)

    return sig, codegen


@njit(inline="always")
def _line_length(width, ow, kw, sw, dw, pw):  # type: ignore[no-untyped-def]
    """Length of the padded line: the input row after ``pw`` pads, or as far as the last tap reads."""
    return max(pw + width, (ow - 1) * sw + (kw - 1) * dw + 1)


@njit(inline="always")
def _max_taps(line, out, ow, kw, sw, dw):  # type: ignore[no-untyped-def]
    """``out[xo]`` = max over taps ``j`` of ``line[xo * sw + j * dw]``. Called with a literal
    ``sw`` where it pays: LLVM then vectorises stride 2 as two loads and a shuffle."""
    if kw == 3 and dw == 1:
        for xo in range(ow):
            p = xo * sw
            out[xo] = max_nan(max_nan(line[p], line[p + 1]), line[p + 2])
    elif kw == 2 and dw == 1:
        for xo in range(ow):
            p = xo * sw
            out[xo] = max_nan(line[p], line[p + 1])
    else:
        for xo in range(ow):
            out[xo] = line[xo * sw]
        for j in range(1, kw):
            off = j * dw
            for xo in range(ow):
                out[xo] = max_nan(out[xo], line[xo * sw + off])


@njit(inline="always")
def _sum_taps(line, acc, ow, kw, sw, dw):  # type: ignore[no-untyped-def]
    """``acc[xo]`` = sum over taps ``j`` of ``line[xo * sw + j * dw]`` (see :func:`_max_taps`)."""
    if kw == 3 and dw == 1:
        for xo in range(ow):
            p = xo * sw
            acc[xo] = line[p] + line[p + 1] + line[p + 2]
    elif kw == 2 and dw == 1:
        for xo in range(ow):
            p = xo * sw
            acc[xo] = line[p] + line[p + 1]
    else:
        for xo in range(ow):
            acc[xo] = line[xo * sw]
        for j in range(1, kw):
            off = j * dw
            for xo in range(ow):
                acc[xo] += line[xo * sw + off]


@njit(nogil=True, error_model="numpy", cache=True)
def max_pool2d(x, kh, kw, sh, sw, dh, dw, ph, pw, y):  # type: ignore[no-untyped-def]
    """``y[t]`` = max over each window of ``x[t]``, NaN where the window holds a NaN and -inf
    where it holds no input element. Taps past the input are padding whatever the end pads,
    so max needs no end pads."""
    planes, height, width = x.shape
    oh, ow = y.shape[1], y.shape[2]
    line = np.full(_line_length(width, ow, kw, sw, dw, pw), -np.inf, dtype=x.dtype)
    mid = line[pw:pw + width]
    for t in range(planes):
        for yo in range(oh):
            hs = yo * sh - ph
            first = True
            for i in range(kh):
                iy = hs + i * dh
                if iy >= height:
                    break
                if iy < 0:
                    continue
                src = x[t, iy]
                if first:
                    for ix in range(width):
                        mid[ix] = src[ix]
                    first = False
                else:
                    for ix in range(width):
                        mid[ix] = max_nan(mid[ix], src[ix])
            if first:  # every row of the window is padding
                for ix in range(width):
                    mid[ix] = -np.inf
            out = y[t, yo]
            if sw == 1:
                _max_taps(line, out, ow, kw, 1, dw)
            elif sw == 2:
                _max_taps(line, out, ow, kw, 2, dw)
            else:
                _max_taps(line, out, ow, kw, sw, dw)


@njit(inline="always", cache=True)
def _taps_counted(out, k, s, d, p, size, end, count_include_pad):  # type: ignore[no-untyped-def]
    """Per output position along one axis, the window's taps an average divides by: those inside
    the input, or with ``count_include_pad`` those before ``end`` (input size + end padding)."""
    counted = np.zeros(out, dtype=np.float64)
    for t in range(k):
        for o in range(out):
            at = o * s - p + t * d
            if (at < end) if count_include_pad else (0 <= at < size):
                counted[o] += 1.0
    return counted


@njit(nogil=True, error_model="numpy", cache=True)
def average_pool2d(x, count_include_pad, kh, kw, sh, sw, dh, dw, ph, pw, end_h, end_w, y):  # type: ignore[no-untyped-def]
    """``y[t]`` = mean over each window of ``x[t]``; ``end_*`` = input size + end padding.

    Sums are taken in float64, as the reference does. The divisor counts the window's taps
    inside the input, or with ``count_include_pad`` those before ``end_*``; windows are
    separable, so either count is rows x columns."""
    planes, height, width = x.shape
    oh, ow = y.shape[1], y.shape[2]
    cols = _taps_counted(ow, kw, sw, dw, pw, width, end_w, count_include_pad)  # per output column
    line = np.zeros(_line_length(width, ow, kw, sw, dw, pw), dtype=np.float64)
    mid = line[pw:pw + width]
    acc = np.empty(ow, dtype=np.float64)
    for t in range(planes):
        for yo in range(oh):
            hs = yo * sh - ph
            rows_valid = 0
            rows_window = 0
            for i in range(kh):
                iy = hs + i * dh
                if iy >= end_h:
                    break
                rows_window += 1
                if iy < 0 or iy >= height:
                    continue
                src = x[t, iy]
                if rows_valid == 0:
                    for ix in range(width):
                        mid[ix] = src[ix]
                else:
                    for ix in range(width):
                        mid[ix] += src[ix]
                rows_valid += 1
            if rows_valid == 0:  # every row of the window is padding
                for ix in range(width):
                    mid[ix] = 0.0
            if sw == 1:
                _sum_taps(line, acc, ow, kw, 1, dw)
            elif sw == 2:
                _sum_taps(line, acc, ow, kw, 2, dw)
            else:
                _sum_taps(line, acc, ow, kw, sw, dw)
            rows = np.float64(rows_window if count_include_pad else rows_valid)
            out = y[t, yo]
            for xo in range(ow):  # a window of no counted taps sums to 0: 0 / 0 is NaN
                out[xo] = acc[xo] / (rows * cols[xo])


@njit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
def global_pool(x, kind, y):  # type: ignore[no-untyped-def]
    """``y[t]`` = max or mean of row ``x[t]`` (rows are (N*C), columns the spatial elements)."""
    rows, size = x.shape
    for t in range(rows):
        if kind == MAX:
            acc = -np.inf
            for p in range(size):
                v = x[t, p]
                if v > acc or v != v:
                    acc = v
            y[t] = acc
        else:
            s = 0.0
            for p in range(size):
                s += x[t, p]
            y[t] = s / size


@njit(inline="always")
def _pad_planes(x, ph, pw, hp, wp, buf):  # type: ignore[no-untyped-def]
    """x's planes into ``buf`` (planes x hp x wp flattened, already filled with padding)."""
    planes, height, width = x.shape
    if wp == width:  # no column padding: each plane is one run
        area = height * width
        runs = x.reshape(planes, area)
        for t in range(planes):
            dst, src = buf[(t * hp + ph) * wp:], runs[t]
            for p in range(area):
                dst[p] = src[p]
        return
    for t in range(planes):
        for iy in range(height):
            base = (t * hp + ph + iy) * wp + pw
            dst, src = buf[base:base + width], x[t, iy]
            for ix in range(width):
                dst[ix] = src[ix]


@njit(inline="always")
def _extract(v, hp, wp, sh, sw, y):  # type: ignore[no-untyped-def]
    """y[t, yo, xo] = v at window (yo, xo)'s first tap of plane t."""
    planes, oh, ow = y.shape
    for t in range(planes):  # (scalar indexing: slicing costs more than a row this short)
        for yo in range(oh):
            base = (t * hp + yo * sh) * wp
            for xo in range(ow):
                y[t, yo, xo] = v[base + xo * sw]


@njit(inline="always")
def _flat_pass(src, dst, n, taps, step, kind):  # type: ignore[no-untyped-def]
    """``dst[p]`` = max or sum over ``t < taps`` of ``src[p + t * step]``, for ``p < n``. The
    taps are read through offset views: an index ``p + off`` would be tested for wraparound,
    which keeps the loop from vectorising; a loop variable is not."""
    s1 = src[step:]
    if taps == 1:
        for p in range(n):
            dst[p] = src[p]
    elif taps == 2:
        if kind == MAX:
            for p in range(n):
                dst[p] = max_nan(src[p], s1[p])
        else:
            for p in range(n):
                dst[p] = src[p] + s1[p]
    else:
        s2 = src[2 * step:]
        if kind == MAX:
            for p in range(n):
                dst[p] = max_nan(max_nan(src[p], s1[p]), s2[p])
        else:
            for p in range(n):
                dst[p] = src[p] + s1[p] + s2[p]
        for t in range(3, taps):
            st = src[t * step:]
            if kind == MAX:
                for p in range(n):
                    dst[p] = max_nan(dst[p], st[p])
            else:
                for p in range(n):
                    dst[p] += st[p]


@njit(inline="always")
def _flat_windows(f, kind, kh, kw, dh, dw, wp):  # type: ignore[no-untyped-def]
    """Combines the taps of every position of the flat buffer ``f`` (columns, then rows) into
    ``f`` itself, valid at the positions whose windows lie in their plane."""
    g = np.empty_like(f)
    n = f.size - (kw - 1) * dw
    _flat_pass(f, g, n, kw, dw, kind)
    _flat_pass(g, f, n - (kh - 1) * dh * wp, kh, dh * wp, kind)


@njit(nogil=True, error_model="numpy", cache=True)
def max_pool2d_flat(x, kh, kw, sh, sw, dh, dw, ph, pw, y):  # type: ignore[no-untyped-def]
    """:func:`max_pool2d` for small planes: the planes padded with -inf (as far as the last tap
    reads) one after another in a flat buffer, the taps of every position combined by flat passes
    (long loops that vectorise, whatever the planes' sizes), and the outputs read at their
    windows' first taps. Positions whose windows cross a plane's edge are never read."""
    planes, height, width = x.shape
    oh, ow = y.shape[1], y.shape[2]
    hp = _line_length(height, oh, kh, sh, dh, ph)
    wp = _line_length(width, ow, kw, sw, dw, pw)
    f = np.full(planes * hp * wp, -np.inf, dtype=x.dtype)
    _pad_planes(x, ph, pw, hp, wp, f)
    _flat_windows(f, MAX, kh, kw, dh, dw, wp)
    _extract(f, hp, wp, sh, sw, y)


@njit(nogil=True, error_model="numpy", cache=True)
def average_pool2d_flat(x, count_include_pad, kh, kw, sh, sw, dh, dw, ph, pw, end_h, end_w, y):  # type: ignore[no-untyped-def]
    """:func:`average_pool2d` for small planes, as :func:`max_pool2d_flat` with zero padding and
    float64 sums, divided by a table of the divisors (rows x columns counted) per output pixel."""
    planes, height, width = x.shape
    oh, ow = y.shape[1], y.shape[2]
    hp = _line_length(height, oh, kh, sh, dh, ph)
    wp = _line_length(width, ow, kw, sw, dw, pw)
    f = np.zeros(planes * hp * wp, dtype=np.float64)
    _pad_planes(x, ph, pw, hp, wp, f)
    _flat_windows(f, AVERAGE, kh, kw, dh, dw, wp)
    rows = _taps_counted(oh, kh, sh, dh, ph, height, end_h, count_include_pad)
    cols = _taps_counted(ow, kw, sw, dw, pw, width, end_w, count_include_pad)
    count = np.empty((oh, ow), dtype=np.float64)
    for yo in range(oh):
        for xo in range(ow):
            count[yo, xo] = rows[yo] * cols[xo]
    for t in range(planes):  # (scalar indexing: slicing costs more than a row this short)
        for yo in range(oh):
            base = (t * hp + yo * sh) * wp
            for xo in range(ow):  # no counted taps: 0 / 0 is NaN
                y[t, yo, xo] = f[base + xo * sw] / count[yo, xo]
