import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._resize_util import resize
from onnxplug.providers.numpy.registry import op


@op("Upsample")
class Upsample(NumpyKernel):
    """Nearest (floor) or linear upsampling with asymmetric coordinates; scales attribute before opset 9."""

    def compute(self, x, scales=None):
        if scales is None:
            scales = self.attr("scales", None)
        if scales is None:  # Upsample-1: height_scale / width_scale on NCHW
            scales = [1.0, 1.0, float(self.attr("height_scale")), float(self.attr("width_scale"))]
        scales = [float(s) for s in np.asarray(scales).reshape(-1)]
        mode = self.attr("mode", "nearest")
        mode = "linear" if mode in ("bilinear", "trilinear") else mode
        out = [int(np.floor(d * s)) for d, s in zip(x.shape, scales)]
        return resize(x, out, scales, mode=mode, coord_mode="asymmetric", nearest_mode="simple")
