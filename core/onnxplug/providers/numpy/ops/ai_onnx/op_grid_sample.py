import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op

_CUBIC_A = -0.75


def _reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Reflect coordinates by the borders until they fall in [lo, hi]."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below = lo - x
    above = x - hi
    out = x.copy()
    for dist, low_side in ((below, True), (above, False)):
        mask = dist > 0
        if not mask.any():
            continue
        k = np.floor(dist[mask] / span)
        r = dist[mask] - k * span
        even = (k % 2) == 0
        near, far = (lo + r, hi - r) if low_side else (hi - r, lo + r)
        out[mask] = np.where(even, near, far)
    return out


def _cubic_weights(f: np.ndarray) -> list[np.ndarray]:
    a = _CUBIC_A
    d = [f + 1, f, 1 - f, 2 - f]
    near = lambda t: ((a + 2) * t - (a + 3)) * t * t + 1  # noqa: E731
    far = lambda t: ((a * t - 5 * a) * t + 8 * a) * t - 4 * a  # noqa: E731
    return [far(d[0]), near(d[1]), near(d[2]), far(d[3])]


@op("GridSample")
class GridSample(NumpyKernel):
    """Sample X at grid locations: nearest / (bi)linear / (bi)cubic, zeros / border / reflection padding, N-D.

    Each spatial axis yields (index, weight, valid) taps; the output sums the gathered values over
    the product of the per-axis taps, all vectorised over batch and grid points.
    """

    def compute(self, x, grid):
        mode = {"bilinear": "linear", "bicubic": "cubic"}.get(self.attr("mode", "bilinear"),
                                                               self.attr("mode", "bilinear"))
        padding = self.attr("padding_mode", "zeros")
        align = bool(self.attr("align_corners", 0))
        xw = widen(x)
        n, c = x.shape[:2]
        sizes = x.shape[2:]
        nd = len(sizes)
        out_sp = grid.shape[1:-1]
        coords = widen(grid)
        axis_taps = []
        for d in range(nd):
            size = sizes[d]
            g = coords[..., nd - 1 - d]  # grid's last entry is x (the last spatial axis)
            pos = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
            lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
            if mode == "nearest":
                pos = np.rint(pos)
            if padding == "border":  # only coordinates beyond the borders are clamped
                pos = np.where((pos < lo) | (pos > hi), np.clip(pos, 0, size - 1), pos)
            elif padding == "reflection":
                pos = _reflect(pos, lo, hi)
            if mode == "nearest":
                taps = [(pos.astype(np.int64), None)]
            else:
                base = np.floor(pos)
                f = pos - base
                base = base.astype(np.int64)
                if mode == "linear":
                    taps = [(base, 1 - f), (base + 1, f)]
                else:
                    taps = [(base + k - 1, w) for k, w in enumerate(_cubic_weights(f))]
            axis_taps.append([self._resolve(i, w, size, padding, lo, hi) for i, w in taps])
        xt = np.moveaxis(xw, 1, -1)  # (N, *in, C): one gather fetches all channels
        batch = np.arange(n).reshape((n,) + (1,) * len(out_sp))
        out = np.zeros((n,) + tuple(out_sp) + (c,), dtype=xw.dtype)
        for combo in np.ndindex(*[len(t) for t in axis_taps]):
            idx = [axis_taps[d][k][0] for d, k in enumerate(combo)]
            weight = None
            for d, k in enumerate(combo):
                w = axis_taps[d][k][1]
                if w is not None:
                    weight = w if weight is None else weight * w
            vals = xt[(batch, *idx)]
            out += vals if weight is None else vals * weight[..., None].astype(xw.dtype, copy=False)
        return np.asarray(np.moveaxis(out, -1, 1), dtype=x.dtype)

    @staticmethod
    def _resolve(idx, weight, size, padding, lo, hi):
        """Index into the input plus weight, with zeros padding folded into the weight."""
        if padding == "zeros":
            valid = (idx >= 0) & (idx < size)
            weight = valid.astype(np.float64) if weight is None else np.where(valid, weight, 0)
            return np.clip(idx, 0, size - 1), weight
        if padding == "border":
            return np.clip(idx, 0, size - 1), weight
        refl = _reflect(idx.astype(np.float64), lo, hi)
        return np.clip(np.trunc(refl).astype(np.int64), 0, size - 1), weight
