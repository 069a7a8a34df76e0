"""Convs with few output pixels per image (late ResNet stages at batch 1), shared by output channels.

Splitting such a conv by bands of output rows (kernels/native_parallel.py) gives each thread a
product of a few dozen columns against the *whole* weight matrix, which BLAS then packs and streams
once per band: a 512x4608 weight (9.4 MB) read twice for 7x7 outputs. Here each image runs two
``prange`` regions instead: im2col split by input channels into one shared column matrix, then the
product split by bands of output channels, so each thread packs and streams only its share of the
weights. The second region starts while the first region's workers still spin, so it is cheap.
float32, group 1 (the caller checks).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from onnxplug_numba.kernels.conv import _finish_row, im2col_padded
from onnxplug_numba.kernels.native_parallel import AVAILABLE, _sgemm

if AVAILABLE:
    @njit(nogil=True, parallel=True, fastmath={"contract"}, cache=True)
    def channel_split_conv(x, wmat, bias, residual, has_residual, act, alpha, beta,
                           kh, kw, sh, sw, dh, dw, ph, pw, y, bands):  # type: ignore[no-untyped-def]
        """y = act(conv(x) + bias (+ residual)) for x (N, C, H, W), wmat (1, M, C*kh*kw),
        y (N, M, OH, OW); per image: im2col in ``bands`` channel slices, then the product in
        ``bands`` slices of output channels (multiples of 8 rows, BLAS's panel height)."""
        n_img, channels = x.shape[0], x.shape[1]
        m_ch, depth = wmat.shape[1], wmat.shape[2]
        oh, ow = y.shape[2], y.shape[3]
        plane = oh * ow
        taps = kh * kw
        cols = np.empty((depth, plane), dtype=x.dtype)
        w = wmat[0]
        for i in range(n_img):
            image = x[i]
            for band in prange(bands):
                c0, c1 = channels * band // bands, channels * (band + 1) // bands
                if c1 > c0:
                    im2col_padded(image, c0, c1, kh, kw, sh, sw, dh, dw, ph, pw, np.int64(0), oh, ow, cols, c0 * taps)
            out = y[i].reshape(m_ch, plane)
            for band in prange(bands):
                m0 = (m_ch * band // bands) // 8 * 8
                m1 = m_ch if band == bands - 1 else (m_ch * (band + 1) // bands) // 8 * 8
                if m1 > m0:
                    _sgemm(m1 - m0, plane, depth, w.ctypes.data + 4 * m0 * depth, depth, cols.ctypes.data, plane,
                           out.ctypes.data + 4 * m0 * plane, plane)
                    for m in range(m0, m1):
                        _finish_row(out[m], bias[m], residual[i, m].reshape(plane), has_residual, act, alpha, beta)

    @njit(nogil=True, parallel=True, fastmath={"contract"}, cache=True)
    def pointwise_channel_split(w, x, bias, residual, has_residual, act, alpha, beta, y, bands):  # type: ignore[no-untyped-def]
        """y[n] = act(w @ x[n] + bias (+ residual[n])) for x (N, K, P), w (M, K), y (N, M, P),
        each image's product in ``bands`` slices of output channels (multiples of 8 rows)."""
        n_img, m_ch, p = y.shape[0], y.shape[1], y.shape[2]
        depth = w.shape[1]
        for i in range(n_img):
            out = y[i]
            for band in prange(bands):
                m0 = (m_ch * band // bands) // 8 * 8
                m1 = m_ch if band == bands - 1 else (m_ch * (band + 1) // bands) // 8 * 8
                if m1 > m0:
                    _sgemm(m1 - m0, p, depth, w.ctypes.data + 4 * m0 * depth, depth, x[i].ctypes.data, p,
                           out.ctypes.data + 4 * m0 * p, p)
                    for m in range(m0, m1):
                        _finish_row(out[m], bias[m], residual[i, m], has_residual, act, alpha, beta)
