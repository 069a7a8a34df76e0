"""Compiled integer convolution for ConvInteger and QLinearConv (ops/op_integer_conv.py).

Work items are (image, band of output pixels); each builds the band's im2col rows, pixel-major,
takes their exact int32 product with the weights of each group, and writes NCHW output: the int32
sum (ConvInteger) or, requantized as the numpy provider does (_quant_util.requantize: float32 of
the sum times the float32 multiplier, rounded half to even, plus the zero point, saturated).
With AVX-512 VNNI (kernels/vnni.py) the rows are raw uint8 (int8 input flipped by 128, its zero
point with it; padding is the zero point) against packed int8 weights (uint8 ones shifted by
-128), and ``sum (q - zq)(s - zs) = sum q s - zs sum q - zq sum s + K zq zs`` restores the
centered sum. Without it the rows and weights are centered int16 and each output is a dot product
LLVM sums in 16-bit pairs. Every sum wraps modulo 2**32 and is exact wherever the result fits int32.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from onnxplug_numba.kernels import vnni

#: Geometry vector layout (int64): see ``geometry`` in ops/op_integer_conv.py.
(G_C, G_H, G_W, G_GROUP, G_CG, G_MG, G_KH, G_KW, G_SH, G_SW, G_DH, G_DW, G_PT, G_PL, G_OH, G_OW,
 G_BAND, G_BANDS) = range(18)


@njit(inline="always", cache=True)
def _rows_u8(x3, c0, geo, p0, rows, pad, flip, q):  # type: ignore[no-untyped-def]
    """im2col rows of pixels p0..p0+rows of group channels c0.. into uint8 ``q`` (flipped by
    ``flip``, out-of-image taps ``pad``); returns nothing, ``q``'s K padding stays zero."""
    h, wd, cg, kh, kw = geo[G_H], geo[G_W], geo[G_CG], geo[G_KH], geo[G_KW]
    sh, sw, dh, dw, pt, pl, ow = geo[G_SH], geo[G_SW], geo[G_DH], geo[G_DW], geo[G_PT], geo[G_PL], geo[G_OW]
    for r in range(rows):
        p = p0 + r
        oy = p // ow
        ox = p - oy * ow
        y0 = oy * sh - pt
        x0 = ox * sw - pl
        qr = q[r]
        k = 0
        for c in range(cg):
            plane = x3[c0 + c]
            for i in range(kh):
                iy = y0 + i * dh
                if 0 <= iy < h:
                    line = plane[iy]
                    for j in range(kw):
                        ix = x0 + j * dw
                        qr[k] = (line[ix] ^ flip) if 0 <= ix < wd else pad
                        k += 1
                else:
                    for j in range(kw):
                        qr[k] = pad
                        k += 1


@njit(inline="always", cache=True)
def _store(acc, rowsum, zw, base, requant, mult, zp, lo, hi, rows, m0, mg, p0, y2):  # type: ignore[no-untyped-def]
    """y2[m0 + m, p0 + r] from acc[r, m] - zw[m] * rowsum[r] + base[m], as int32 or requantized."""
    for m in range(mg):
        z = zw[m]
        b = base[m]
        out = y2[m0 + m]
        if requant:
            f = mult[m]
            for r in range(rows):
                v = np.rint(np.float32(np.int32(acc[r, m] - z * rowsum[r] + b)) * f) + zp
                out[p0 + r] = min(max(v, lo), hi)
        else:
            for r in range(rows):
                out[p0 + r] = np.int32(acc[r, m] - z * rowsum[r] + b)


@njit(nogil=True, error_model="numpy", cache=True)
def conv_vnni(x4, flip, zq, packed, colsum, zs, bias, geo, requant, mult, zp, lo, hi, y3, lo_item, hi_item):  # type: ignore[no-untyped-def]
    """Items lo_item..hi_item of the conv with packed int8 weights (group, N/64, K/4, 64, 4),
    their column sums (group, N padded) and zero points ``zs`` (M, int64); x4 uint8 (N, C, H, W),
    ``zq`` its (flipped) zero point; y3 (N, M, OH*OW)."""
    cg, kh, kw, mg, group = geo[G_CG], geo[G_KH], geo[G_KW], geo[G_MG], geo[G_GROUP]
    band, bands, pixels = geo[G_BAND], geo[G_BANDS], geo[G_OH] * geo[G_OW]
    k = cg * kh * kw
    q = np.zeros((band, packed.shape[2] * 4), dtype=np.uint8)
    acc = np.empty((band, packed.shape[1] * vnni.COLUMNS), dtype=np.int32)
    rowsum = np.empty(band, dtype=np.int64)
    base = np.empty(mg, dtype=np.int64)
    for item in range(lo_item, hi_item):
        n = item // bands
        p0 = (item - n * bands) * band
        rows = min(band, pixels - p0)
        for g in range(group):
            _rows_u8(x4[n], g * cg, geo, p0, rows, np.uint8(zq), np.uint8(flip), q)
            for r in range(rows):
                s = 0
                qr = q[r]
                for j in range(k):
                    s += np.int64(qr[j])
                rowsum[r] = s
            vnni.product(q[:rows], packed[g], acc[:rows])
            zsg = zs[g * mg:(g + 1) * mg]
            for m in range(mg):
                base[m] = k * zq * zsg[m] - zq * np.int64(colsum[g, m]) + bias[g * mg + m]
            _store(acc, rowsum, zsg, base, requant, mult[g * mg:(g + 1) * mg], zp, lo, hi, rows, g * mg, mg,
                   p0, y3[n])


@njit(nogil=True, error_model="numpy", cache=True)
def conv_int16(x4, flip, zq, wc, bias, geo, requant, mult, zp, lo, hi, y3, lo_item, hi_item):  # type: ignore[no-untyped-def]
    """:func:`conv_vnni` without VNNI: wc the centered weights (group, M/group, K) int16."""
    cg, kh, kw, mg, group = geo[G_CG], geo[G_KH], geo[G_KW], geo[G_MG], geo[G_GROUP]
    band, bands, pixels = geo[G_BAND], geo[G_BANDS], geo[G_OH] * geo[G_OW]
    k = cg * kh * kw
    q = np.zeros((band, k), dtype=np.uint8)
    c16 = np.empty(k, dtype=np.int16)
    acc = np.empty((band, mg), dtype=np.int32)
    rowsum = np.zeros(band, dtype=np.int64)
    zero = np.zeros(mg, dtype=np.int64)
    base = np.empty(mg, dtype=np.int64)
    for item in range(lo_item, hi_item):
        n = item // bands
        p0 = (item - n * bands) * band
        rows = min(band, pixels - p0)
        for g in range(group):
            _rows_u8(x4[n], g * cg, geo, p0, rows, np.uint8(zq), np.uint8(flip), q)
            wg = wc[g]
            for r in range(rows):
                qr = q[r]
                for j in range(k):
                    c16[j] = np.int16(qr[j]) - np.int16(zq)
                for m in range(mg):
                    w = wg[m]
                    s = np.int32(0)
                    for j in range(k):
                        s += np.int32(c16[j]) * np.int32(w[j])
                    acc[r, m] = s
            for m in range(mg):
                base[m] = bias[g * mg + m]
            _store(acc, rowsum, zero, base, requant, mult[g * mg:(g + 1) * mg], zp, lo, hi, rows, g * mg, mg,
                   p0, y3[n])
