import numpy as np

from onnxplug.providers.numpy.blas import parallel_for
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op

#: A transposing copy costs about 0.7 ns per value here, as much as ~14 multiply-adds of a product:
#: large ones that keep the first axis go one index of it at a time to the product threads (numpy's
#: copies release the GIL; MobileNetV2's 8 x 32 x 112 x 112 to channels-last: 1.4-1.8 ms, 2.3-3.2
#: ms as one copy).
MACS_PER_VALUE = 14


@op("Transpose")
class Transpose(NumpyKernel):
    def compute(self, x):
        perm = self.attr("perm")  # default: reverse the axes
        axes = None if perm is None else [int(p) for p in perm]
        view = np.transpose(x, axes)  # numpy checks the permutation
        if axes is None or axes[0] != 0 or x.ndim < 2 or x.shape[0] < 2:
            return np.ascontiguousarray(view)
        out = np.empty(view.shape, dtype=x.dtype)
        inner = [a - 1 for a in axes[1:]]

        def copy(i: int) -> None:
            out[i] = x[i].transpose(inner)

        if not parallel_for(x.shape[0], copy, x.size * MACS_PER_VALUE):
            np.copyto(out, view)
        return out
