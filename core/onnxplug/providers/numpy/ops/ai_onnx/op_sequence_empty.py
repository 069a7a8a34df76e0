from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("SequenceEmpty")
class SequenceEmpty(NumpyKernel):
    def compute(self):
        return []
