"""Direct depthwise convolution over phase planes: any kernel size, stride, dilation and padding.

Each input plane is scattered once into ``sh * sw`` zero-padded *phase planes* (phase ``(a, b)``
holds the padded pixels whose row is ``a`` mod ``sh`` and column ``b`` mod ``sw``), all with the
row pitch ``wq``. Then tap ``(i, j)`` of output element ``e = yo * wq + xo`` sits at
``offset(i, j) + e`` of that buffer, whatever the stride: every tap is one contiguous slice, and
the whole plane's output is one long loop (the ``wq - ow`` extra columns per row are computed and
dropped). For 3x3 windows all nine taps are summed in registers with one store per element; 5- and
7-wide windows add one kernel row's taps per pass over the output.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from onnxplug_numba.kernels.conv import _finish_row


@njit(inline="always", fastmath={"contract"})
def _sum9(acc, buf, taps, w, m, bias, low, high, count):  # type: ignore[no-untyped-def]
    """acc[e] = bias + the nine weighted taps ``buf[taps[k] + e]`` (weights ``w[m, 0]``), clamped
    to [low, high].

    Unsigned indices into one array: no negative-index fix-up, and only ``acc`` against ``buf``
    to check for overlap, so LLVM vectorises the loop (nine separate slices defeat its checks)."""
    w0, w1, w2 = w[m, 0, 0, 0], w[m, 0, 0, 1], w[m, 0, 0, 2]
    w3, w4, w5 = w[m, 0, 1, 0], w[m, 0, 1, 1], w[m, 0, 1, 2]
    w6, w7, w8 = w[m, 0, 2, 0], w[m, 0, 2, 1], w[m, 0, 2, 2]
    o0, o1, o2 = np.uint64(taps[0]), np.uint64(taps[1]), np.uint64(taps[2])
    o3, o4, o5 = np.uint64(taps[3]), np.uint64(taps[4]), np.uint64(taps[5])
    o6, o7, o8 = np.uint64(taps[6]), np.uint64(taps[7]), np.uint64(taps[8])
    for e in range(np.uint64(count)):
        v = (bias + w0 * buf[o0 + e] + w1 * buf[o1 + e] + w2 * buf[o2 + e] + w3 * buf[o3 + e]
             + w4 * buf[o4 + e] + w5 * buf[o5 + e] + w6 * buf[o6 + e] + w7 * buf[o7 + e] + w8 * buf[o8 + e])
        v = v if v > low else low
        acc[e] = v if v < high else high


@njit(inline="always", fastmath={"contract"})
def _add_row5(acc, buf, taps, w, m, i, count):  # type: ignore[no-untyped-def]
    """acc[e] += the five weighted taps of kernel row ``i`` (a 5-wide window), one pass over ``acc``
    per kernel row instead of one per tap (see :func:`_sum9` for the unsigned indices)."""
    w0, w1, w2, w3, w4 = w[m, 0, i, 0], w[m, 0, i, 1], w[m, 0, i, 2], w[m, 0, i, 3], w[m, 0, i, 4]
    k = i * 5
    o0, o1, o2 = np.uint64(taps[k]), np.uint64(taps[k + 1]), np.uint64(taps[k + 2])
    o3, o4 = np.uint64(taps[k + 3]), np.uint64(taps[k + 4])
    for e in range(np.uint64(count)):
        acc[e] += (w0 * buf[o0 + e] + w1 * buf[o1 + e] + w2 * buf[o2 + e] + w3 * buf[o3 + e]
                   + w4 * buf[o4 + e])


@njit(inline="always", fastmath={"contract"})
def _add_row7(acc, buf, taps, w, m, i, count):  # type: ignore[no-untyped-def]
    """As :func:`_add_row5` for a 7-wide window."""
    w0, w1, w2, w3 = w[m, 0, i, 0], w[m, 0, i, 1], w[m, 0, i, 2], w[m, 0, i, 3]
    w4, w5, w6 = w[m, 0, i, 4], w[m, 0, i, 5], w[m, 0, i, 6]
    k = i * 7
    o0, o1, o2, o3 = np.uint64(taps[k]), np.uint64(taps[k + 1]), np.uint64(taps[k + 2]), np.uint64(taps[k + 3])
    o4, o5, o6 = np.uint64(taps[k + 4]), np.uint64(taps[k + 5]), np.uint64(taps[k + 6])
    for e in range(np.uint64(count)):
        acc[e] += (w0 * buf[o0 + e] + w1 * buf[o1 + e] + w2 * buf[o2 + e] + w3 * buf[o3 + e]
                   + w4 * buf[o4 + e] + w5 * buf[o5 + e] + w6 * buf[o6 + e])


@njit(inline="always")
def _scatter_plan(height, width, sh, sw, ph, pw, hq, wq, phase_size):  # type: ignore[no-untyped-def]
    """Copies that scatter an (H, W) plane into its phase planes, as rows of (source offset in the
    flat plane, destination offset, count): worked out once per call, not once per plane."""
    plan = np.empty((height * sw, 3), dtype=np.int64)
    rows = 0
    for r in range(height):
        pr = r + ph
        rq = pr // sh
        if rq >= hq:
            break
        for b in range(sw):
            c0 = (b - pw) % sw  # first input column of column phase b
            if c0 >= width:
                continue
            cq0 = (c0 + pw) // sw
            count = min((width - c0 + sw - 1) // sw, wq - cq0)
            if count > 0:
                plan[rows, 0] = r * width + c0
                plan[rows, 1] = ((pr % sh) * sw + b) * phase_size + rq * wq + cq0
                plan[rows, 2] = count
                rows += 1
    return plan[:rows]


@njit(inline="always")
def _scatter_plane(flat, start, buf, plan, sw):  # type: ignore[no-untyped-def]
    """Copy the plane at ``flat[start:]`` into its phase planes; positions outside stay as they
    were (zeros). Unsigned indices with a constant step, so the copies vectorise (step 2 with
    shuffles); offsets into the whole arrays rather than a view per plane or a slice per row, since
    each costs reference-count updates, which dominated small planes (a 7x7 plane copies 7 rows of
    7 values)."""
    for d in range(plan.shape[0]):
        s0 = np.uint64(start + plan[d, 0])
        d0 = np.uint64(plan[d, 1])
        count = np.uint64(plan[d, 2])
        if sw == 1:
            for k in range(count):
                buf[d0 + k] = flat[s0 + k]
        elif sw == 2:
            for k in range(count):
                buf[d0 + k] = flat[s0 + np.uint64(2) * k]
        else:
            step = np.uint64(sw)
            for k in range(count):
                buf[d0 + k] = flat[s0 + step * k]


@njit(nogil=True, fastmath={"contract"}, cache=True)
def depthwise_phased(x, w, bias, residual, has_residual, act, alpha, beta,
                     sh, sw, dh, dw, ph, pw, y, lo, hi):  # type: ignore[no-untyped-def]
    """x (N, C, H, W), w (C*mult, 1, kh, kw) -> y (N, C*mult, OH, OW) for the output planes
    ``[lo, hi)`` of the N*C*mult, with bias, residual and activation fused."""
    channels = x.shape[1]
    m_ch, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    mult = m_ch // channels
    oh, ow = y.shape[2], y.shape[3]
    hq = oh + ((kh - 1) * dh) // sh + 1
    wq = ow + ((kw - 1) * dw) // sw + 1
    phase_size = hq * wq
    count = oh * wq
    buf = np.zeros(sh * sw * phase_size + wq, dtype=x.dtype)  # slack: the last taps read past a row
    acc = np.empty(count, dtype=x.dtype)
    taps = np.empty(kh * kw, dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            taps[i * kw + j] = (((i * dh) % sh) * sw + (j * dw) % sw) * phase_size \
                + ((i * dh) // sh) * wq + (j * dw) // sw
    # no residual and none, Relu or Clip: the activation is a clamp inside the 3x3 sum
    clamped = not has_residual and act in (0, 1, 2) and kh == 3 and kw == 3
    low, high = x.dtype.type(-np.inf), x.dtype.type(np.inf)
    if clamped and act == 1:
        low = x.dtype.type(0)
    elif clamped and act == 2:
        low, high = x.dtype.type(alpha), x.dtype.type(beta)
    finish = (has_residual or act != 0) and not clamped
    plan = _scatter_plan(x.shape[2], x.shape[3], sh, sw, ph, pw, hq, wq, phase_size)
    # whole arrays and offsets: no view per plane (see _scatter_plane)
    x_flat = x.ravel()  # (a copy if x is not contiguous: it is only read)
    y_flat = y.reshape(y.size)  # a view: y must be contiguous (reshape raises otherwise)
    plane_in, plane_out = x.shape[2] * x.shape[3], oh * ow
    last = -1
    for t in range(lo, hi):
        n = t // m_ch
        m = t % m_ch
        source = n * channels + m // mult
        if source != last:  # channel multipliers reuse the scattered plane
            _scatter_plane(x_flat, source * plane_in, buf, plan, sw)
            last = source
        b = acc.dtype.type(bias[m])
        if kh == 3 and kw == 3:
            _sum9(acc, buf, taps, w, m, b, low, high, count)
        elif kw == 5 or kw == 7:
            acc[:] = b
            for i in range(kh):
                if kw == 5:
                    _add_row5(acc, buf, taps, w, m, i, count)
                else:
                    _add_row7(acc, buf, taps, w, m, i, count)
        else:
            acc[:] = b
            for k in range(kh * kw):
                wv = w[m, 0, k // kw, k % kw]
                src = buf[taps[k]:taps[k] + count]
                for e in range(count):
                    acc[e] += wv * src[e]
        if finish:
            out = y[n, m]
            for yo in range(oh):
                row = out[yo]
                src = acc[yo * wq:]
                for k in range(ow):
                    row[k] = src[k]
                # a zero of the row's type: a float64 0.0 compiled a second _finish_row
                _finish_row(row, row.dtype.type(0), residual[n, m, yo], has_residual, act, alpha, beta)
        else:
            base = np.uint64(t * plane_out)
            for yo in range(np.uint64(oh)):
                o0 = base + yo * np.uint64(ow)
                a0 = yo * np.uint64(wq)
                for k in range(np.uint64(ow)):
                    y_flat[o0 + k] = acc[a0 + k]
