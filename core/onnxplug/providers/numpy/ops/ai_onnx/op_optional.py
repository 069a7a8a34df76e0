from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Optional")
class Optional(NumpyKernel):
    """An optional holding the input, or empty (None) without one; the ``type`` attribute only types it."""

    def compute(self, value=None):
        return value
