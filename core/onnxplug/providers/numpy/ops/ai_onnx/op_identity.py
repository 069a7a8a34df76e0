from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Identity")
class Identity(NumpyKernel):
    """Tensors, sequences (lists) and optionals (None when empty) pass through."""

    def compute(self, x):
        if x is None:
            return None
        return list(x) if isinstance(x, list) else x.copy()
