import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import axes_from
from onnxplug.providers.numpy.registry import op


@op("Squeeze")
class Squeeze(NumpyKernel):
    def compute(self, x, axes=None):
        found = axes_from(self, axes, 13)
        return np.squeeze(x) if found is None else np.squeeze(x, axis=tuple(found))
