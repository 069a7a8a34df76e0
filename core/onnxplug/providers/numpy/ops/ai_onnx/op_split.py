import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import ints, normalize_axis
from onnxplug.providers.numpy.registry import op


@op("Split")
class Split(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.axis = int(self.attr("axis", 0))

    def compute(self, x, split=None):
        axis = normalize_axis(self.axis, x.ndim)
        parts = len(self.node.outputs)
        # ``split`` is an attribute in opsets 2-12, an input in 13+ (opset 1 accepts either).
        sizes = self.attr("split") if 2 <= self.node.opset < 13 or split is None else split
        dim = x.shape[axis]
        if sizes is None or len(sizes) == 0:
            chunk = -(-dim // parts)  # opset 18 num_outputs: equal chunks, a smaller last one
            if self.node.opset < 18 and dim % parts:
                raise ValueError(f"Split: dimension {dim} cannot be split into {parts} equal parts")
            sizes = [min(chunk, max(dim - i * chunk, 0)) for i in range(parts)]
        # the views np.split returns, sliced directly (np.split's Python steps cost more than a small split)
        points = [0] + np.cumsum(ints(sizes))[:-1].tolist() + [dim]
        lead = (slice(None),) * axis
        return tuple(x[lead + (slice(points[i], points[i + 1]),)] for i in range(len(points) - 1))
