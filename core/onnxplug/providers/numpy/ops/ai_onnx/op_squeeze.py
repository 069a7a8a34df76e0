import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import VARYING, axes_from, constant_axes
from onnxplug.providers.numpy.registry import op


@op("Squeeze")
class Squeeze(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        axes = constant_axes(self, context.constants, 13)
        self.axes = axes if axes is VARYING or axes is None else tuple(axes)

    def compute(self, x, axes=None):
        found = self.axes
        if found is VARYING:
            found = axes_from(self, axes, 13)
            found = None if found is None else tuple(found)
        x = np.asarray(x)
        return x.squeeze() if found is None else x.squeeze(axis=found)
