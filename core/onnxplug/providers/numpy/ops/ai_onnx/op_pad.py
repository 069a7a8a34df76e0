import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints, normalize_axis
from onnxplug.providers.numpy.registry import op

_NUMPY_MODES = {"reflect": "reflect", "edge": "edge", "wrap": "wrap"}


@op("Pad")
class Pad(NumpyKernel):
    def compute(self, x, pads=None, constant_value=None, axes=None):
        if self.node.opset < 11:  # attributes: ``paddings`` (opset 1), ``pads`` (opset 2)
            pads = self.attr("paddings") if self.node.opset < 2 else self.attr("pads")
            constant_value = np.asarray(self.attr("value", 0.0))
        return self.pad(x, pads, constant_value, axes)

    def pad(self, x, pads, constant_value=None, axes=None):
        """Opset 11's semantics (also com.microsoft Pad's): pads, value and axes as inputs."""
        pads = ints(pads)
        axes_l = list(range(x.ndim)) if axes is None else [normalize_axis(a, x.ndim) for a in ints(axes)]
        n = len(axes_l)
        if len(pads) != 2 * n:
            raise ValueError(f"Pad: {len(pads)} pads given for {n} axes (expected {2 * n})")
        before, after = [0] * x.ndim, [0] * x.ndim
        for i, axis in enumerate(axes_l):
            before[axis], after[axis] = pads[i], pads[n + i]
        # Negative pads crop first; what remains pads with non-negative amounts.
        crop = tuple(slice(max(-b, 0), x.shape[i] - max(-a, 0)) for i, (b, a) in enumerate(zip(before, after)))
        x = x[crop]
        widths = [(max(b, 0), max(a, 0)) for b, a in zip(before, after)]
        mode = self.attr("mode", "constant")
        if mode != "constant":
            if mode not in _NUMPY_MODES:
                raise ValueError(f"Pad: unsupported mode {mode!r}")
            return np.pad(x, widths, mode=_NUMPY_MODES[mode])
        fill = self._fill(x.dtype, constant_value)
        out = np.full(tuple(s + b + a for s, (b, a) in zip(x.shape, widths)), fill, dtype=x.dtype)
        out[tuple(slice(b, b + s) for s, (b, _) in zip(x.shape, widths))] = x
        return out

    @staticmethod
    def _fill(dtype, constant_value):
        if constant_value is not None and np.asarray(constant_value).size:
            return np.asarray(constant_value).reshape(-1)[0]
        return "" if dtype == object else dtype.type(0)
