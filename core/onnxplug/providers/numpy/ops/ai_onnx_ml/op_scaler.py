import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML, float_rows
from onnxplug.providers.numpy.registry import op


@op("Scaler", domain=ML)
class Scaler(NumpyKernel):
    """(x - offset) * scale per feature (or one value for all), in float32."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self._offset = np.asarray(self.attr("offset") or [0.0], dtype=np.float32)
        self._scale = np.asarray(self.attr("scale") or [1.0], dtype=np.float32)

    def compute(self, x):
        return ((float_rows(x) - self._offset) * self._scale).reshape(x.shape)
