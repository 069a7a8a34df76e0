import numpy as np

from onnxplug.providers.numpy.ops._reduce_util import ExtremumKernel, lowest
from onnxplug.providers.numpy.registry import op


@op("ReduceMax")
class ReduceMax(ExtremumKernel):
    ufunc = np.maximum
    empty_identity = staticmethod(lowest)  # -inf on an empty set
