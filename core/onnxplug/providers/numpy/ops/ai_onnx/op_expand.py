import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints
from onnxplug.providers.numpy.registry import op


@op("Expand")
class Expand(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        #: the target shape read once when it is a constant input (else None)
        self.shape = None
        value = context.constants.get(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
        if value is not None:
            try:
                self.shape = tuple(ints(value))
            except (TypeError, ValueError):  # malformed: compute raises the same error at run time
                self.shape = None
        #: input shape -> output shape, for the constant target shape
        self._out_shapes: dict[tuple[int, ...], tuple[int, ...]] = {}

    def compute(self, x, shape):
        # Broadcasting goes both ways: a 1 in ``shape`` keeps the input's dimension.
        if self.shape is None:
            out_shape = np.broadcast_shapes(x.shape, tuple(ints(shape)))
        else:
            out_shape = self._out_shapes.get(x.shape)
            if out_shape is None:
                out_shape = np.broadcast_shapes(x.shape, self.shape)
                self._out_shapes[x.shape] = out_shape  # one entry per input shape: a dict store is atomic
        # the C-ordered copy np.array(np.broadcast_to(x, out_shape)) makes, without their Python steps
        out = np.empty(out_shape, dtype=x.dtype)
        np.copyto(out, x)
        return out
