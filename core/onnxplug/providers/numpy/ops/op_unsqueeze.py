import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import axes_from, normalize_axis
from onnxplug.providers.numpy.registry import op


@op("Unsqueeze")
class Unsqueeze(NumpyKernel):
    def compute(self, x, axes=None):
        found = axes_from(self, axes, 13) or []
        rank = x.ndim + len(found)  # axes index the output
        return np.expand_dims(x, tuple(sorted(normalize_axis(a, rank, "Unsqueeze axis") for a in found)))
