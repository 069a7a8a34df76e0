"""Compiled convolution pieces: im2col, col2im and the fused epilogue (depthwise: depthwise.py).

The matrix products themselves go to BLAS (numpy.matmul); these loops prepare and finish them.
Activations are numbered (see :data:`ACTIVATIONS`) so one compiled epilogue serves them all.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from onnxplug_numba.kernels.fastmath import sigmoid, tanh

#: Activation codes of the epilogues, with the meaning of (alpha, beta).
ACTIVATIONS = {"": 0, "Relu": 1, "Clip": 2, "LeakyRelu": 3, "Sigmoid": 4, "Tanh": 5, "HardSigmoid": 6}


@njit(inline="always", cache=True)
def _activate(v, act, alpha, beta):  # type: ignore[no-untyped-def]
    if act == 1:
        return v if v > 0 else v * 0
    if act == 2:
        v = v if v > alpha else alpha
        return v if v < beta else beta
    if act == 3:
        return v if v >= 0 else v * alpha
    if act == 4:  # float32: onnxruntime's own approximations, as its fused conv
        return sigmoid(v)
    if act == 5:
        return tanh(v)
    if act == 6:
        h = alpha * v + beta
        return 0 * v if h < 0 else (1 + 0 * v if h > 1 else h)
    return v


# a called function, not inlined: inlined into every conv kernel it multiplied their numba IR,
# whose parallel passes (copy propagation) grow faster than linearly with it (cold compile time)
@njit(nogil=True, fastmath={"contract"}, cache=True)
def _finish_row(row, b, res, has_residual, act, alpha, beta):  # type: ignore[no-untyped-def]
    """row = act(row + b (+ res)) in place; one branch per row, so each loop vectorises."""
    zero = row.dtype.type(0)
    b = row.dtype.type(b)
    if has_residual:
        for p in range(row.shape[0]):
            row[p] += res[p]
    if act == 0:
        for p in range(row.shape[0]):
            row[p] += b
    elif act == 1:
        for p in range(row.shape[0]):
            v = row[p] + b
            row[p] = v if v > zero else zero
    elif act == 2:
        lo, hi = row.dtype.type(alpha), row.dtype.type(beta)
        for p in range(row.shape[0]):
            v = row[p] + b
            v = v if v > lo else lo
            row[p] = v if v < hi else hi
    else:
        for p in range(row.shape[0]):
            row[p] = _activate(row[p] + b, act, alpha, beta)


@njit(nogil=True, fastmath={"contract"}, cache=True)
def epilogue(y, bias, residual, has_residual, act, alpha, beta):  # type: ignore[no-untyped-def]
    """In place on ``y`` (N, M, P), any strides: add per-channel ``bias``, then ``residual``, then activate."""
    n_img, m_ch = y.shape[0], y.shape[1]
    for t in range(n_img * m_ch):
        n = t // m_ch
        m = t % m_ch
        _finish_row(y[n, m], bias[m], residual[n, m], has_residual, act, alpha, beta)


@njit(nogil=True, cache=True)
def im2col(x, c0, c1, kh, kw, sh, sw, dh, dw, ph, pw, oh, ow, cols):  # type: ignore[no-untyped-def]
    """Columns of channels [c0, c1) of one image ``x`` (C, H, W) into cols (rows, oh*ow); pads read as 0."""
    height, width = x.shape[1], x.shape[2]
    taps = kh * kw
    for r in range((c1 - c0) * taps):
        c = c0 + r // taps
        i = (r % taps) // kw
        j = r % kw
        off = j * dw - pw
        lo = min(ow, max(0, -(off // sw)))
        hi = min(ow, (width - 1 - off) // sw + 1)
        if hi < lo:
            hi = lo
        for yo in range(oh):
            iy = yo * sh - ph + i * dh
            dst = cols[r, yo * ow:(yo + 1) * ow]
            if iy < 0 or iy >= height or hi == lo:
                dst[:] = 0
                continue
            dst[:lo] = 0
            # an element loop, not a slice assignment: that one compiles numba's shape-mismatch
            # message formatting (string overloads, a large part of a cold start)
            src = x[c, iy]
            for e in range(lo, hi):
                dst[e] = src[e * sw + off]
            dst[hi:] = 0


@njit(nogil=True, cache=True)
def col2im(cols, kh, kw, in_h, in_w, sh, sw, dh, dw, ph, pw, out):  # type: ignore[no-untyped-def]
    """Scatter-add cols (M*kh*kw, in_h*in_w) into out (M, OH, OW), as ConvTranspose needs."""
    m_ch, oh, ow = out.shape
    for m in range(m_ch):
        for i in range(kh):
            for j in range(kw):
                r = (m * kh + i) * kw + j
                for iy in range(in_h):
                    oy = iy * sh + i * dh - ph
                    if oy < 0 or oy >= oh:
                        continue
                    for ix in range(in_w):
                        ox = ix * sw + j * dw - pw
                        if 0 <= ox < ow:
                            out[m, oy, ox] += cols[r, iy * in_w + ix]


@njit(nogil=True, cache=True)
def gather_rows(flat, offsets, step, cols):  # type: ignore[no-untyped-def]
    """cols[r, e] = flat[offsets[r] + step * e]: im2col over a zero-padded image with row pitch
    ``step * cols-pitch``, one long copy per row of cols (no per-output-row bookkeeping)."""
    count = cols.shape[1]
    for r in range(cols.shape[0]):
        dst = cols[r]
        if step == 1:
            src = flat[offsets[r]:offsets[r] + count]
            for e in range(count):
                dst[e] = src[e]
        else:
            strided = flat[offsets[r]:offsets[r] + step * (count - 1) + 1:step]
            for e in range(count):
                dst[e] = strided[e]


@njit(nogil=True, fastmath={"contract"}, cache=True)
def epilogue_pitched(src, pitch, bias, residual, has_residual, act, alpha, beta, out):  # type: ignore[no-untyped-def]
    """out (M, rows, ow) = act(src (M, rows * pitch)[:, :, :ow] + bias (+ residual)): drops the
    padding columns of a pitched product while applying the epilogue."""
    m_ch, rows, ow = out.shape
    for m in range(m_ch):
        for yo in range(rows):
            row = out[m, yo]
            row[:] = src[m, yo * pitch:yo * pitch + ow]
            _finish_row(row, bias[m], residual[m, yo], has_residual, act, alpha, beta)


@njit(nogil=True, cache=True)
def im2col_padded(x, c0, c1, kh, kw, sh, sw, dh, dw, ph, pw, r0, oh, ow, cols, row0):  # type: ignore[no-untyped-def]
    """Rows ``row0 ...`` of cols (rows, oh*ow) = im2col of channels [c0, c1) of one image ``x``
    (C, H, W), output rows r0 ... r0 + oh. Same result as :func:`im2col`, but faster: the band of
    input rows is first copied into a zero-padded buffer, so every output row of every tap is a
    contiguous copy of ``ow`` elements with no bounds to check (unsigned indices, so it vectorises).
    For a column stride ``sw`` > 1 each padded row is stored as ``sw`` phases (columns ``q``,
    ``q + sw``, ... together), which keeps those copies contiguous too."""
    if kh == 1 and kw == 1:  # a (strided) subsample: copying whole rows first would only add work
        im2col(x, c0, c1, 1, 1, sh, sw, dh, dw, ph - r0 * sh, pw, oh, ow, cols[row0:row0 + c1 - c0])
        return
    height, width = x.shape[1], x.shape[2]
    wp = (ow - 1) * sw + (kw - 1) * dw + 1
    wq = (wp + sw - 1) // sw  # columns per phase
    pitch = wq * sw
    hb = (oh - 1) * sh + (kh - 1) * dh + 1  # padded rows the band reads, from padded row r0 * sh
    padded = np.zeros((c1 - c0) * hb * pitch, dtype=x.dtype)
    lo, hi = min(wp, max(0, pw)), min(wp, max(0, pw + width))
    if hi > lo:
        for c in range(c1 - c0):
            for t in range(hb):
                src_row = r0 * sh + t - ph
                if 0 <= src_row < height:
                    src = x[c0 + c, src_row, lo - pw:]
                    row = padded[(c * hb + t) * pitch:]
                    if sw == 1:
                        dst = row[lo:]
                        for e in range(np.uint64(hi - lo)):
                            dst[e] = src[e]
                    else:  # one strided copy per phase (vectorised like the stride-1 one)
                        step = np.uint64(sw)
                        for q in range(sw):
                            first = lo + (q - lo) % sw  # the phase's first padded column
                            if first < hi:
                                dst = row[q * wq + first // sw:]
                                part = src[first - lo:]
                                for e in range(np.uint64((hi - 1 - first) // sw + 1)):
                                    dst[e] = part[step * e]
    taps = kh * kw
    # offsets into the whole arrays, not two slices per copied row: a slice costs reference-count
    # updates, which add up over (channels x taps x rows) copies of a dozen values on small images
    flat = cols.reshape(cols.size)  # (cols is contiguous: a view)
    width_out, step_in = np.uint64(ow), np.uint64(sh * pitch)
    for r in range((c1 - c0) * taps):
        i = (r % taps) // kw
        col = (r % kw) * dw
        s0 = np.uint64(((r // taps) * hb + i * dh) * pitch + (col % sw) * wq + col // sw)
        d0 = np.uint64((row0 + r) * cols.shape[1])
        for yo in range(np.uint64(oh)):
            d = d0 + yo * width_out
            src = s0 + yo * step_in
            for e in range(width_out):
                flat[d + e] = padded[src + e]
