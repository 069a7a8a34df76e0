import numpy as np

from onnxplug.providers.numpy.kernels.tiled_transpose import MAX_COLS, MIN_VALUES, matrix_transpose, tiled_transpose
from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS, parallel_for
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op

#: A transposing copy costs as much per value as ~14 multiply-adds of a product: large ones that
#: keep the first axis go one index of it at a time to the product threads (numpy's copies release
#: the GIL).
MACS_PER_VALUE = 14

#: Outputs whose last axis has at most this many values (an image going channels-last) are copied
#: one index of that axis at a time: numpy's transposing copy runs an inner loop over each run of
#: so few values.
SHORT_LAST_AXIS = 4


def _copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for a transposed view ``src``."""
    if dst.ndim and 1 < dst.shape[-1] <= SHORT_LAST_AXIS and src.strides[-1] != src.itemsize and dst.size >= 1024:
        for j in range(dst.shape[-1]):
            dst[..., j] = src[..., j]
    else:
        np.copyto(dst, src)


@op("Transpose")
class Transpose(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        perm = self.attr("perm")  # default: reverse the axes
        self.axes = None if perm is None else [int(p) for p in perm]
        self.inner = None if self.axes is None or not self.axes else [a - 1 for a in self.axes[1:]]
        #: per input shape: (batch, rows, cols) of a matrix transpose (tiled_transpose), or ()
        self._matrix: dict[tuple[int, ...], tuple[int, ...]] = {}

    def compute(self, x):
        axes = self.axes
        view = x.transpose(axes)  # numpy checks the permutation
        out = np.empty(view.shape, dtype=x.dtype)
        if x.size >= MIN_VALUES and axes is not None and x.flags.c_contiguous:
            matrix = self._matrix.get(x.shape)
            if matrix is None:
                matrix = self._matrix[x.shape] = matrix_transpose(x.shape, axes) or ()
            # short input rows (channels-last going channels-first); an output last axis of a
            # few values takes the per-index copies of _copy
            if matrix and matrix[2] <= MAX_COLS and matrix[1] > SHORT_LAST_AXIS:
                tiled_transpose(x, out, *matrix, MACS_PER_VALUE)
                return out
        if axes is None or axes[0] != 0 or x.ndim < 2 or x.shape[0] < 2 or PRODUCT_THREADS.threads < 2:
            _copy(out, view)
            return out
        inner = self.inner

        def copy(i: int) -> None:
            _copy(out[i], x[i].transpose(inner))

        if not parallel_for(x.shape[0], copy, x.size * MACS_PER_VALUE):
            _copy(out, view)
        return out
