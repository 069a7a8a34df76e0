"""Crop (onnxruntime, default domain): of NCHW images, border = [left, top, right, bottom] removed,
or with scale = [height, width] that window from (top, left)."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Crop")
class Crop(NumpyKernel):
    def compute(self, x):
        border = [int(b) for b in self.attr("border", None) or []]
        if x.ndim != 4 or len(border) != 4:
            raise ValueError(f"{self.node.describe()}: needs NCHW input and border [left, top, right, bottom]; "
                             f"got shape {list(x.shape)} and border {border}")
        left, top, right, bottom = border
        height, width = x.shape[2:]
        scale = [int(s) for s in self.attr("scale", None) or []]
        bottom_edge, right_edge = (top + scale[0], left + scale[1]) if scale else (height - bottom, width - right)
        if not (0 <= top < bottom_edge <= height and 0 <= left < right_edge <= width):
            raise ValueError(f"{self.node.describe()}: border {border} and scale {scale} do not fit {height} x {width}")
        return x[:, :, top:bottom_edge, left:right_edge].copy()
