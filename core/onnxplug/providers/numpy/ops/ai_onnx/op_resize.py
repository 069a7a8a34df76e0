import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._resize_util import resize
from onnxplug.providers.numpy.registry import op


def _given(v):
    return v is not None and np.asarray(v).size > 0


@op("Resize")
class Resize(NumpyKernel):
    """Separable nearest/linear/cubic resize (see _resize_util); opset 10 behaves like Upsample."""

    def compute(self, x, roi=None, scales=None, sizes=None):
        if self.node.opset < 11:  # Resize-10: (X, scales), asymmetric coordinates
            scales = roi
            out = [int(np.floor(d * s)) for d, s in zip(x.shape, scales)]
            return resize(x, out, [float(s) for s in scales], mode=self.attr("mode", "nearest"),
                          coord_mode="asymmetric", nearest_mode="simple")
        rank = x.ndim
        axes = [int(a) % rank for a in (self.attr("axes", None) or range(rank))]
        full_scales = [1.0] * rank
        out = list(x.shape)
        if _given(sizes):
            for a, v in zip(axes, np.asarray(sizes).reshape(-1)):
                out[a] = int(v)
                full_scales[a] = out[a] / x.shape[a] if x.shape[a] else 1.0
            policy = self.attr("keep_aspect_ratio_policy", "stretch")
            if policy != "stretch":
                pick = min if policy == "not_larger" else max
                s = pick(full_scales[a] for a in axes)
                for a in axes:
                    full_scales[a] = s
                    out[a] = int(s * x.shape[a] + 0.5)
        elif _given(scales):
            for a, v in zip(axes, np.asarray(scales, dtype=np.float64).reshape(-1)):
                full_scales[a] = float(v)
                out[a] = int(np.floor(x.shape[a] * float(v)))
        else:
            raise ValueError(f"{self.node.describe()}: one of 'scales' and 'sizes' must be given")
        full_roi = None
        if _given(roi):
            r = np.asarray(roi, dtype=np.float64).reshape(-1)
            full_roi = [0.0] * rank + [1.0] * rank
            for i, a in enumerate(axes):
                full_roi[a] = r[i]
                full_roi[rank + a] = r[len(axes) + i]
        return resize(
            x, out, full_scales, mode=self.attr("mode", "nearest"),
            coord_mode=self.attr("coordinate_transformation_mode", "half_pixel"),
            nearest_mode=self.attr("nearest_mode", "round_prefer_floor"),
            cubic_a=float(self.attr("cubic_coeff_a", -0.75)), exclude_outside=bool(self.attr("exclude_outside", 0)),
            antialias=bool(self.attr("antialias", 0)), extrapolation_value=float(self.attr("extrapolation_value", 0.0)),
            roi=full_roi)
