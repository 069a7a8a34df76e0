"""com.microsoft FusedConv (onnxruntime's session fuses Conv [+ Add] + activation into it): the
same schema as the project's com.onnxplug FusedConv, whose kernel computes it:
Y = activation(Conv(X, W, B) + Z), ``activation`` and ``activation_params``."""

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_conv import FusedConv as _OwnFusedConv
from onnxplug.providers.numpy.registry import op


@op("FusedConv", domain=DOMAIN)
class FusedConv(_OwnFusedConv):
    pass
