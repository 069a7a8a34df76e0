from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._scatter_util import scatter_elements
from onnxplug.providers.numpy.ops._shape_util import normalize_axis
from onnxplug.providers.numpy.registry import op


@op("ScatterElements")
class ScatterElements(NumpyKernel):
    def compute(self, data, indices, updates):
        axis = normalize_axis(int(self.attr("axis", 0)), data.ndim)
        return scatter_elements(data, indices, updates, axis, self.attr("reduction", "none"))
