from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._scatter_util import scatter_nd
from onnxplug.providers.numpy.registry import op


@op("ScatterND")
class ScatterND(NumpyKernel):
    def compute(self, data, indices, updates):
        return scatter_nd(data, indices, updates, self.attr("reduction", "none"))
