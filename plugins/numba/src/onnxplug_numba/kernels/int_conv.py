"""Compiled integer convolution for ConvInteger and QLinearConv (ops/op_integer_conv.py).

The input is first copied to a padded NHWC image (padding is the zero point), so each pixel's
im2col row is contiguous runs of its group's channels, in (tap, channel) order as the weights are
laid out. Work items are (image, band of output pixels): each builds the band's rows, takes their
exact int32 product with each group's weights and writes NCHW output, the int32 sum (ConvInteger)
or requantized as the numpy provider does (_quant_util.requantize: float32 of the sum times the
float32 multiplier, rounded half to even, plus the zero point, saturated). With AVX-512 VNNI
(kernels/vnni.py) rows are raw uint8 (int8 input flipped by 128, its zero point too) against
packed int8 weights (uint8 ones shifted by -128); ``sum (q - zq)(s - zs) = sum q s - zs sum q -
zq sum s + K zq zs`` restores the centered sum. Otherwise rows and weights are centered int16.
Every sum wraps modulo 2**32, so each is exact wherever the result fits int32."""

from __future__ import annotations

import numpy as np
from numba import njit

from onnxplug_numba.kernels import vnni

#: Geometry vector layout (int64): see ``_geo`` in ops/op_integer_conv.py. HP, WP: the padded image.
(G_C, G_H, G_W, G_GROUP, G_CG, G_MG, G_KH, G_KW, G_SH, G_SW, G_DH, G_DW, G_PT, G_PL, G_OH, G_OW,
 G_BAND, G_BANDS, G_HP, G_WP) = range(20)


@njit(nogil=True, cache=True)
def pad_nhwc(x4, flip, zq, pt, pl, xp):  # type: ignore[no-untyped-def]
    """xp (N, HP, WP, C') = x4 (N, C, H, W) transposed, flipped by ``flip``, at (pt, pl) in a
    margin of ``zq``; channels C..C' (padding to a multiple of 4) are ``zq`` too."""
    u = np.uint64
    n, c, h, w = u(x4.shape[0]), u(x4.shape[1]), u(x4.shape[2]), u(x4.shape[3])
    hp, wp, cp = u(xp.shape[1]), u(xp.shape[2]), u(xp.shape[3])
    top, left = u(pt), u(pl)
    pad = np.uint8(zq)
    f = np.uint8(flip)
    src = x4.reshape(-1)
    dst = xp.reshape(-1)
    dst[:] = pad  # (flat unsigned indices below, as :func:`_rows`)
    for i in range(n):
        for ch in range(c):
            for y in range(h):
                s0 = ((i * c + ch) * h + y) * w
                d0 = ((i * hp + top + y) * wp + left) * cp + ch
                for x in range(w):
                    dst[d0 + x * cp] = src[s0 + x] ^ f


@njit(inline="always", cache=True)
def _rows(xp, c0, cg, geo, p0, rows, q):  # type: ignore[no-untyped-def]
    """im2col rows of pixels p0..p0+rows of the ``cg`` channels from c0 of padded image xp
    (HP, WP, C) into q (rows, K padded), in (tap, channel) order; q's K padding stays zero. Both
    may be viewed as 32-bit words (four channels a unit) when every group takes whole words. (Flat unsigned
    indices: views made in the loops would each cost reference counting, and signed indices a
    negative-index test per element, which keeps LLVM from vectorizing the copies.)"""
    u = np.uint64
    cg, kh, kw = u(cg), u(geo[G_KH]), u(geo[G_KW])
    sh, sw, dh, dw, ow = u(geo[G_SH]), u(geo[G_SW]), u(geo[G_DH]), u(geo[G_DW]), u(geo[G_OW])
    c, wp, k4, first = u(xp.shape[2]), u(xp.shape[1]), u(q.shape[1]), u(c0)
    src = xp.reshape(-1)
    dst = q.reshape(-1)
    # a kernel row's taps are one run of kw * C units when they are adjacent and take every channel
    merged = dw == 1 and cg == c
    run = kw * cg if merged else cg
    step = dh * wp * c  # from one kernel row to the next
    oy = u(p0) // ow  # (one division: the pixel's row and column then step along)
    ox = u(p0) - oy * ow
    for r in range(u(rows)):
        if ox == ow:
            ox = u(0)
            oy += u(1)
        k = r * k4
        at = (oy * sh * wp + ox * sw) * c + first
        if merged:
            for i in range(kh):
                for e in range(run):
                    dst[k + e] = src[at + e]
                k += run
                at += step
        else:
            for i in range(kh):
                for j in range(kw):
                    s0 = at + j * dw * c
                    for e in range(run):
                        dst[k + e] = src[s0 + e]
                    k += run
                at += step
        ox += u(1)


@njit(inline="always", cache=True)
def _row_sums(q, rows, k, rowsum):  # type: ignore[no-untyped-def]
    u = np.uint64
    flat = q.reshape(-1)
    k4 = u(q.shape[1])
    for r in range(u(rows)):
        s = np.int32(0)
        for j in range(r * k4, r * k4 + u(k)):
            s += np.int32(flat[j])
        rowsum[r] = s


@njit(inline="always", cache=True)
def _store(acc, rowsum, zw, base, requant, mult, zp, lo, hi, rows, m0, mg, p0, stage, y2):  # type: ignore[no-untyped-def]
    """y2[m0 + m, p0 + r] from acc[r, m] - zw[m] * rowsum[r] + base[m] (int32, wrapping), as int32
    or requantized: computed along each row of acc (vectorized over m), then transposed through
    ``stage`` (rows, mg) of y2's type. (Flat unsigned indices, as :func:`_rows`.)"""
    u = np.uint64
    a = acc.reshape(-1)
    st = stage.reshape(-1)
    out = y2.reshape(-1)
    width, pixels, n = u(acc.shape[1]), u(y2.shape[1]), u(mg)
    for r in range(u(rows)):
        rs = rowsum[r]
        row, at = r * width, r * n
        if requant:
            for m in range(n):
                v = np.int32(a[row + m] - np.int32(zw[m] * rs) + base[m])
                st[at + m] = min(max(np.rint(np.float32(v) * mult[m]) + zp, lo), hi)
        else:
            for m in range(n):
                st[at + m] = np.int32(a[row + m] - np.int32(zw[m] * rs) + base[m])
    for m in range(n):
        at = (u(m0) + m) * pixels + u(p0)
        for r in range(u(rows)):
            out[at + r] = st[r * n + m]


@njit(nogil=True, error_model="numpy", cache=True)
def conv_vnni(x4, xp, pad, flip, zq, packed, colsum, zs, bias, geo, requant, mult, zp, lo, hi, y3, lo_item,  # type: ignore[no-untyped-def]
              hi_item):
    """Items lo_item..hi_item of the conv of padded NHWC uint8 ``xp`` (zero point ``zq``; first
    made from ``x4`` flipped by ``flip`` when ``pad``) with
    packed int8 weights (group, N/width, K/4, width, 4) with width 16, 32 or 64, their column sums (group, N padded) and zero
    points ``zs`` (M, int32); y3 (N, M, OH*OW). A pointwise stride-1 unpadded conv of one group
    whose channels are a multiple of 4 reads its rows straight from ``xp``."""
    if pad:
        pad_nhwc(x4, flip, zq, geo[G_PT], geo[G_PL], xp)
    cg, kh, kw, mg, group = geo[G_CG], geo[G_KH], geo[G_KW], geo[G_MG], geo[G_GROUP]
    band, bands, pixels = geo[G_BAND], geo[G_BANDS], geo[G_OH] * geo[G_OW]
    k = cg * kh * kw
    k4 = packed.shape[2] * 4
    direct = group == 1 and kh == 1 and kw == 1 and k == k4 and geo[G_SH] == 1 and geo[G_SW] == 1 \
        and geo[G_HP] * geo[G_WP] == pixels
    q = np.zeros((band, k4), dtype=np.uint8)
    width = packed.shape[3]  # columns per packed group: 16, 32 or 64
    acc = np.empty((band, packed.shape[1] * width), dtype=np.int32)
    rowsum = np.zeros(band, dtype=np.int32)
    base = np.empty(mg, dtype=np.int32)
    stage = np.empty((band, mg), dtype=y3.dtype)
    sums = False
    for m in range(zs.size):
        sums = sums or zs[m] != 0
    for item in range(lo_item, hi_item):
        n = item // bands
        p0 = (item - n * bands) * band
        rows = min(band, pixels - p0)
        for g in range(group):
            if direct:
                src = xp[n].reshape(pixels, k4)[p0:p0 + rows]
            elif cg % 4 == 0:
                _rows(xp[n].view(np.uint32), g * cg // 4, cg // 4, geo, p0, rows, q.view(np.uint32))
                src = q[:rows]
            else:
                _rows(xp[n], g * cg, cg, geo, p0, rows, q)
                src = q[:rows]
            if sums:
                _row_sums(src, rows, k, rowsum)
            if width < vnni.GROUP * vnni.LANES:  # 16 or 32 columns
                vnni.product_narrow(src, packed[g], acc[:rows], width // vnni.LANES)
            else:
                vnni.product(src, packed[g], acc[:rows])
            zsg = zs[g * mg:(g + 1) * mg]
            for m in range(mg):
                base[m] = np.int32(k * zq * np.int64(zsg[m]) - zq * np.int64(colsum[g, m]) + bias[g * mg + m])
            _store(acc, rowsum, zsg, base, requant, mult[g * mg:(g + 1) * mg], zp, lo, hi, rows, g * mg, mg,
                   p0, stage, y3[n])


@njit(nogil=True, error_model="numpy", cache=True)
def conv_int16(x4, xp, pad, flip, zq, wc, bias, geo, requant, mult, zp, lo, hi, y3, lo_item, hi_item):  # type: ignore[no-untyped-def]
    """:func:`conv_vnni` without VNNI: wc the centered weights (group, M/group, K) int16."""
    if pad:
        pad_nhwc(x4, flip, zq, geo[G_PT], geo[G_PL], xp)
    cg, kh, kw, mg, group = geo[G_CG], geo[G_KH], geo[G_KW], geo[G_MG], geo[G_GROUP]
    band, bands, pixels = geo[G_BAND], geo[G_BANDS], geo[G_OH] * geo[G_OW]
    k = cg * kh * kw
    q = np.zeros((band, k), dtype=np.uint8)
    c16 = np.empty(k, dtype=np.int16)
    acc = np.empty((band, mg), dtype=np.int32)
    rowsum = np.zeros(band, dtype=np.int32)
    zero = np.zeros(mg, dtype=np.int32)
    base = np.empty(mg, dtype=np.int32)
    stage = np.empty((band, mg), dtype=y3.dtype)
    for item in range(lo_item, hi_item):
        n = item // bands
        p0 = (item - n * bands) * band
        rows = min(band, pixels - p0)
        for g in range(group):
            if cg % 4 == 0 and k % 4 == 0:
                _rows(xp[n].view(np.uint32), g * cg // 4, cg // 4, geo, p0, rows, q.view(np.uint32))
            else:
                _rows(xp[n], g * cg, cg, geo, p0, rows, q)
            wg = wc[g]
            for r in range(rows):
                qr = q[r]
                for j in range(k):
                    c16[j] = np.int16(qr[j]) - np.int16(zq)
                for m in range(mg):
                    w = wg[m]
                    s = np.int32(0)
                    for j in range(k):
                        # kept int32 at each step (numba widens int32 sums to int64): LLVM then
                        # sums the int16 products in pairs (vpmaddwd)
                        s = np.int32(s + np.int32(c16[j]) * np.int32(w[j]))
                    acc[r, m] = s
            for m in range(mg):
                base[m] = np.int32(bias[g * mg + m])
            _store(acc, rowsum, zero, base, requant, mult[g * mg:(g + 1) * mg], zp, lo, hi, rows, g * mg, mg,
                   p0, stage, y3[n])
