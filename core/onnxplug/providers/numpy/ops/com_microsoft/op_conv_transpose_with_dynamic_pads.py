"""com.microsoft ConvTransposeWithDynamicPads: ai.onnx ConvTranspose whose pads may come as an input
(X, W, Pads, B), overriding the ``pads`` attribute."""

from onnxplug.providers.numpy.ops._shape_util import ints
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_conv_transpose import ConvTranspose
from onnxplug.providers.numpy.registry import op


@op("ConvTransposeWithDynamicPads", domain=DOMAIN)
class ConvTransposeWithDynamicPads(ConvTranspose):
    def compute(self, x, w, pads=None, b=None):
        return self.transpose(x, w, b, self.attr("pads", None) if pads is None else ints(pads))
