import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._shape_util import VARYING, axes_from, constant_axes, normalize_axis
from onnxplug.providers.numpy.registry import op


@op("Unsqueeze")
class Unsqueeze(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.axes = constant_axes(self, context.constants, 13)
        #: output rank -> the sorted output axes of the new dims (a constant ``axes`` only)
        self._placed: dict[int, tuple[int, ...]] = {}

    def compute(self, x, axes=None):
        found = self.axes
        if found is VARYING:
            found = axes_from(self, axes, 13)
        found = found or []
        x = np.asarray(x)
        rank = x.ndim + len(found)  # axes index the output
        placed = self._placed.get(rank) if self.axes is not VARYING else None
        if placed is None:
            placed = tuple(sorted(normalize_axis(a, rank, "Unsqueeze axis") for a in found))
            if len(set(placed)) != len(placed):
                raise ValueError(f"Unsqueeze axes {list(found)} repeat an axis")
            if self.axes is not VARYING:
                self._placed[rank] = placed  # one entry per rank: a dict store is atomic
        shape = list(x.shape)
        for axis in placed:
            shape.insert(axis, 1)
        return x.reshape(shape)
