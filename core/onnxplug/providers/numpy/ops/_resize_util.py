"""Resize arithmetic shared by Resize and Upsample.

Resizing is separable: each resized axis is one gather of ``n`` neighbour taps per output
position and a weighted sum, with the tap indices and weights computed once per axis as
(out, n) tables. Nearest needs one tap and no arithmetic at all.
"""

from __future__ import annotations

import numpy as np


def source_coords(mode: str, out_len: int, in_len: int, scale: float, roi: tuple[float, float] | None):
    """Source coordinates of every output position along one axis, and the extrapolated mask."""
    y = np.arange(out_len, dtype=np.float64)
    out_float = scale * in_len
    extrapolated = None
    if mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        offset = in_len / 2 * (1 - out_len / out_float)
        x = offset + (y + 0.5) / scale - 0.5
    elif mode == "pytorch_half_pixel":
        x = np.full(out_len, -0.5) if out_float == 1 else (y + 0.5) / scale - 0.5
    elif mode == "align_corners":
        x = np.zeros(out_len) if out_float == 1 else y * (in_len - 1) / (out_float - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_crop_and_resize":
        lo, hi = roi if roi is not None else (0.0, 1.0)
        if out_float == 1:
            x = np.full(out_len, (hi - lo) * (in_len - 1) / 2)
        else:
            x = y * (hi - lo) * (in_len - 1) / (out_float - 1)
        x = x + lo * (in_len - 1)
        extrapolated = (x < 0) | (x > in_len - 1)
    else:
        raise ValueError(f"unknown coordinate_transformation_mode {mode!r}")
    return x, extrapolated


def nearest_index(x: np.ndarray, mode: str, in_len: int, downsampling: bool) -> np.ndarray:
    """Nearest source index per ``nearest_mode`` ('simple' is the Upsample/Resize-10 rule)."""
    fl = np.floor(x)
    frac = x - fl
    if mode == "round_prefer_floor":
        idx = np.where(frac <= 0.5, fl, fl + 1)
    elif mode == "round_prefer_ceil":
        idx = np.where(frac < 0.5, fl, fl + 1)
    elif mode == "floor":
        idx = fl
    elif mode == "ceil":
        idx = np.ceil(x)
    elif mode == "simple":
        idx = np.ceil(x) if downsampling else fl
    else:
        raise ValueError(f"unknown nearest_mode {mode!r}")
    return np.clip(idx, 0, in_len - 1).astype(np.intp)


def _cubic_kernel(d: np.ndarray, a: float) -> np.ndarray:
    d = np.abs(d)
    d2, d3 = d * d, d * d * d
    near = (a + 2) * d3 - (a + 3) * d2 + 1
    far = a * d3 - 5 * a * d2 + 8 * a * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def interpolation_taps(x: np.ndarray, kind: str, in_len: int, scale: float, antialias: bool,
                       cubic_a: float, exclude_outside: bool) -> tuple[np.ndarray, np.ndarray]:
    """(indices, weights), both (out, n): the n taps of linear or cubic interpolation at ``x``."""
    fl = np.floor(x)
    ratio = np.where(x == fl, 1.0, x - fl)  # in (0, 1]: the left pixel is preferred
    s = min(scale, 1.0) if antialias else 1.0
    support = 1 if kind == "linear" else 2  # kernel radius in source pixels before antialias widening
    start = int(np.floor(-support / s) + 1)
    n = 2 - 2 * start
    dist = (np.arange(start, start + n, dtype=np.float64)[None, :] - ratio[:, None]) * s
    w = np.clip(1 - np.abs(dist), 0, 1) if kind == "linear" else _cubic_kernel(dist, cubic_a)
    if antialias:
        w = w / w.sum(axis=1, keepdims=True)
    # the n indices nearest to x, ties to the smaller one (edge padding = clamping later)
    pad = -(-n // 2)
    xp = x + pad
    p = np.floor(xp)
    frac = xp - p
    if n % 2 == 0:
        first = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        base = -((n - 1) // 2)
        first = np.where(frac <= 0.5, base, base + 1)
    idx = (p + first).astype(np.intp)[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        w = np.where((idx < 0) | (idx >= in_len), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, in_len - 1), w


def resize_axis(data: np.ndarray, axis: int, idx: np.ndarray, w: np.ndarray | None,
                extrapolated: np.ndarray | None, extrapolation_value: float) -> np.ndarray:
    """Gather the taps along ``axis`` and sum them with their weights (none for nearest)."""
    if w is None:
        out = np.take(data, idx, axis=axis)
    else:
        shape = (1,) * axis + (idx.shape[0],) + (1,) * (data.ndim - axis - 1)
        wt = w.astype(data.dtype, copy=False)
        out = np.take(data, idx[:, 0], axis=axis) * wt[:, 0].reshape(shape)
        for k in range(1, idx.shape[1]):
            out += np.take(data, idx[:, k], axis=axis) * wt[:, k].reshape(shape)
    if extrapolated is not None and extrapolated.any():
        shape = (1,) * axis + (idx.shape[0],) + (1,) * (data.ndim - axis - 1)
        out = np.where(extrapolated.reshape(shape), out.dtype.type(extrapolation_value), out)
    return out


def resize(x: np.ndarray, out_shape: list[int], scales: list[float], *, mode: str, coord_mode: str,
           nearest_mode: str = "round_prefer_floor", cubic_a: float = -0.75, exclude_outside: bool = False,
           antialias: bool = False, extrapolation_value: float = 0.0,
           roi: list[float] | None = None) -> np.ndarray:
    """Resize every axis whose size or scale changes; ``roi`` holds starts then ends for all axes."""
    rank = x.ndim
    kind = mode.lower()
    float_in = x.dtype.kind == "f" and x.dtype.itemsize >= 4
    data = x if kind == "nearest" or float_in else x.astype(np.float32)
    for axis in range(rank):
        scale = float(scales[axis])
        out_len = int(out_shape[axis])
        in_len = x.shape[axis]
        axis_roi = None if roi is None else (float(roi[axis]), float(roi[axis + rank]))
        identity_roi = axis_roi is None or coord_mode != "tf_crop_and_resize" or axis_roi == (0.0, 1.0)
        if out_len == in_len and scale == 1.0 and identity_roi:
            continue
        if out_len == 0 or in_len == 0:
            shape = list(data.shape)
            shape[axis] = out_len
            data = np.zeros(shape, dtype=data.dtype)
            continue
        coords, extrapolated = source_coords(coord_mode, out_len, in_len, scale, axis_roi)
        if kind == "nearest":
            idx = nearest_index(coords, nearest_mode, in_len, scale < 1)
            data = resize_axis(data, axis, idx, None, extrapolated, extrapolation_value)
        else:
            idx, w = interpolation_taps(coords, kind, in_len, scale, antialias, cubic_a, exclude_outside)
            data = resize_axis(data, axis, idx, w, extrapolated, extrapolation_value)
    if data.dtype == x.dtype:
        return data if data is not x else x.copy()
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return np.clip(np.round(data), info.min, info.max).astype(x.dtype)
    return data.astype(x.dtype)
