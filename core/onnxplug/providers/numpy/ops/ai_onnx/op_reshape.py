import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints
from onnxplug.providers.numpy.registry import op


@op("Reshape")
class Reshape(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.from_attribute = node.opset < 5
        self.allowzero = bool(self.attr("allowzero", 0))
        #: the target shape read once when it is the attribute or a constant input (else None)
        self.dims = None
        try:
            if self.from_attribute:
                self.dims = ints(self.attr("shape"))
            elif len(node.inputs) > 1 and node.inputs[1]:
                value = context.constants.get(node.inputs[1])
                if value is not None:
                    self.dims = ints(value)
        except (TypeError, ValueError):  # malformed: compute raises the same error at run time
            self.dims = None
        #: where a 0 in the constant shape copies the input's dimension
        self.copies_dims = ([] if self.dims is None or self.allowzero
                            else [i for i, d in enumerate(self.dims) if d == 0])

    def compute(self, x, shape=None):
        dims = self.dims
        if dims is None:
            dims = ints(self.attr("shape") if self.from_attribute else shape)
        else:
            if self.copies_dims:
                dims = list(dims)
                shape = x.shape
                for i in self.copies_dims:
                    dims[i] = shape[i]
            return x.reshape(dims)
        if not self.allowzero and 0 in dims:  # 0 copies the input's dimension
            dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
        return x.reshape(dims)
