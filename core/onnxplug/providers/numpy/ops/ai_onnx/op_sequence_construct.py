from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("SequenceConstruct")
class SequenceConstruct(NumpyKernel):
    def compute(self, *tensors):
        return list(tensors)
