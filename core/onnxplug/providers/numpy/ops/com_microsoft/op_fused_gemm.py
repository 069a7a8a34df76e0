"""com.microsoft FusedGemm (onnxruntime's session fuses Gemm + activation into it):
Y = activation(alpha * A' @ B' + beta * C), Gemm's attributes; the activation's parameters are
``activation_alpha`` (LeakyRelu, HardSigmoid) and ``activation_beta`` (HardSigmoid)."""

from onnxplug.ir import Node
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_activation import in_place_activation
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_gemm import FusedGemm as _OwnFusedGemm
from onnxplug.providers.numpy.registry import op

#: Activations and the defaults of their parameters (onnxruntime's).
_ACTIVATIONS = {"": (), "Relu": (), "Sigmoid": (), "Tanh": (), "LeakyRelu": (0.01,), "HardSigmoid": (0.2, 0.5)}


@op("FusedGemm", domain=DOMAIN)
class FusedGemm(_OwnFusedGemm):
    def __init__(self, node, context):
        super().__init__(node, context)
        name = self.attr("activation", "")
        defaults = _ACTIVATIONS[name]
        params = [float(self.attr(key, default))
                  for key, default in zip(("activation_alpha", "activation_beta"), defaults)]
        self.activation = (name, params)
        self._activate = in_place_activation(name, params)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return node.attr("activation", "") in _ACTIVATIONS
