"""Compiled convolution pieces: im2col, a direct depthwise kernel, col2im and the fused epilogue.

The matrix products themselves go to BLAS (numpy.matmul); these loops prepare and finish them.
Activations are numbered (see :data:`ACTIVATIONS`) so one compiled epilogue serves them all.
"""

from __future__ import annotations

import numpy as np
from numba import njit

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
    if act == 4:
        return 1 / (1 + np.exp(-v)) if v >= 0 else np.exp(v) / (1 + np.exp(v))
    if act == 5:
        return np.tanh(v)
    if act == 6:
        h = alpha * v + beta
        return 0 * v if h < 0 else (1 + 0 * v if h > 1 else h)
    return v


@njit(inline="always", cache=True)
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
            dst[lo:hi] = x[c, iy, lo * sw + off:(hi - 1) * sw + off + 1:sw]
            dst[hi:] = 0


@njit(inline="always", fastmath={"contract"})
def _row3(out, bias, w0, w1, w2, w3, w4, w5, w6, w7, w8, a0, a1, a2, b0, b1, b2, c0, c1, c2):  # type: ignore[no-untyped-def]
    """out[e] = bias + the nine taps; each tap is its own slice indexed by ``e`` alone, so the
    loads are plain contiguous vector loads."""
    for e in range(out.shape[0]):
        out[e] = (bias + w0 * a0[e] + w1 * a1[e] + w2 * a2[e] + w3 * b0[e] + w4 * b1[e] + w5 * b2[e]
                  + w6 * c0[e] + w7 * c1[e] + w8 * c2[e])


@njit(inline="always", fastmath={"contract"})
def _depthwise3x3_plane(padded, wp, hp, w, b, sh, sw, dh, dw, out, even, odd):  # type: ignore[no-untyped-def]
    """out (OH, OW) = 3x3 window of the zero-padded plane (row pitch ``wp``) . w + b.

    All nine taps of an output element are summed in registers, one store per element, along
    the output row. Column step 2 (with dilation 1) first splits the plane into its even and
    odd columns, so its taps are contiguous too."""
    oh, ow = out.shape
    w0, w1, w2 = w[0, 0], w[0, 1], w[0, 2]
    w3, w4, w5 = w[1, 0], w[1, 1], w[1, 2]
    w6, w7, w8 = w[2, 0], w[2, 1], w[2, 2]
    bias = out.dtype.type(b)
    if sw == 1:
        for yo in range(oh):
            r0 = yo * sh * wp
            r1 = r0 + dh * wp
            r2 = r1 + dh * wp
            _row3(out[yo], bias, w0, w1, w2, w3, w4, w5, w6, w7, w8,
                  padded[r0:], padded[r0 + dw:], padded[r0 + 2 * dw:],
                  padded[r1:], padded[r1 + dw:], padded[r1 + 2 * dw:],
                  padded[r2:], padded[r2 + dw:], padded[r2 + 2 * dw:])
        return
    for r in range(hp):
        row = padded[r * wp:(r + 1) * wp]
        ev = even[r]
        od = odd[r]
        for e in range((wp + 1) // 2):
            ev[e] = row[2 * e]
        for e in range(wp // 2):
            od[e] = row[2 * e + 1]
    for yo in range(oh):
        i0 = yo * sh
        i1 = i0 + dh
        i2 = i1 + dh
        _row3(out[yo], bias, w0, w1, w2, w3, w4, w5, w6, w7, w8,
              even[i0], odd[i0], even[i0, 1:], even[i1], odd[i1], even[i1, 1:],
              even[i2], odd[i2], even[i2, 1:])


@njit(nogil=True, fastmath={"contract"}, cache=True)
def depthwise(x, w, bias, residual, has_residual, act, alpha, beta,
              sh, sw, dh, dw, ph, pw, y, lo, hi):  # type: ignore[no-untyped-def]
    """Direct depthwise conv: x (N, C, H, W), w (C*mult, 1, kh, kw) -> y (N, C*mult, OH, OW), epilogue
    fused; computes the output planes ``[lo, hi)`` of the N*C*mult.

    Each plane is copied into a zero-padded buffer of row pitch ``wp``; an accumulator with the same
    pitch then receives one pass per tap over the whole plane (``acc[e] += w * padded[s*e + shift]``),
    so the loops are long and branch-free; the columns past ``ow`` are computed and dropped."""
    channels, height, width = x.shape[1], x.shape[2], x.shape[3]
    m_ch, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    mult = m_ch // channels
    oh, ow = y.shape[2], y.shape[3]
    hp = max(height + ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(width + pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    count = oh * wp
    padded = np.zeros(sh * count + hp * wp + kw * dw + 1, dtype=x.dtype)
    acc = np.empty(count, dtype=x.dtype)
    half = (wp + 1) // 2 if sw == 2 else 0  # the even and odd columns, for 3x3 step-2 convs
    even = np.zeros((hp, half + 1), dtype=x.dtype)
    odd = np.zeros((hp, half + 1), dtype=x.dtype)
    for t in range(lo, hi):
        n = t // m_ch
        m = t % m_ch
        plane = x[n, m // mult]
        for r in range(height):
            padded[(ph + r) * wp + pw:(ph + r) * wp + pw + width] = plane[r]
        if kh == 3 and kw == 3 and ow >= 8 and (sw == 1 or (sw == 2 and dw == 1)):  # short rows: whole-plane passes
            _depthwise3x3_plane(padded, wp, hp, w[m, 0], bias[m], sh, sw, dh, dw, y[n, m], even, odd)
            if has_residual or act != 0:
                for yo in range(oh):
                    _finish_row(y[n, m, yo], 0.0, residual[n, m, yo], has_residual, act, alpha, beta)
            continue
        acc[:] = bias[m]
        for i in range(kh):
            for j in range(kw):
                wv = w[m, 0, i, j]
                start = i * dh * wp + j * dw
                if sh == 1 and sw == 1:  # unit-step slices keep the contiguous type: vector loads
                    src = padded[start:start + count]
                    for e in range(count):
                        acc[e] += wv * src[e]
                else:
                    for yo in range(oh):
                        row = acc[yo * wp:yo * wp + ow]
                        first = start + yo * sh * wp
                        taps = padded[first:first + (ow - 1) * sw + 1:sw]
                        for k in range(ow):
                            row[k] += wv * taps[k]
        for yo in range(oh):
            out = y[n, m, yo]
            out[:] = acc[yo * wp:yo * wp + ow]
            if has_residual or act != 0:
                _finish_row(out, 0.0, residual[n, m, yo], has_residual, act, alpha, beta)


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
