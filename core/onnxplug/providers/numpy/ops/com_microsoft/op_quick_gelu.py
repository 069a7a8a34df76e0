"""com.microsoft QuickGelu: x * sigmoid(alpha x), alpha 1.702 by default."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_sigmoid import sigmoid
from onnxplug.providers.numpy.registry import op


@op("QuickGelu", domain=DOMAIN)
class QuickGelu(NumpyKernel):
    def compute(self, x):
        work = widen(x).reshape(x.shape or (1,))  # sigmoid works in place: no numpy scalars
        gate = sigmoid(work * work.dtype.type(self.attr("alpha", 1.702)))
        gate *= work
        return gate.reshape(x.shape).astype(x.dtype, copy=False)
