import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("Einsum")
class Einsum(NumpyKernel):
    """numpy.einsum with path optimisation (contractions become BLAS tensordot calls)."""

    def __init__(self, node, context):
        super().__init__(node, context)
        self.equation = str(self.attr("equation")).replace(" ", "")

    def compute(self, *inputs):
        out = np.einsum(self.equation, *[widen(x) for x in inputs], optimize=len(inputs) > 1)
        return np.asarray(out, dtype=inputs[0].dtype)
