"""com.onnxplug RMSNormalization (docs/fused-ops.md): ai.onnx RMSNormalization-23's schema, which the
optimizer writes for models below opset 23."""

from onnxplug.providers.numpy.ops.ai_onnx.op_rms_normalization import RMSNormalization
from onnxplug.providers.numpy.registry import op


@op("RMSNormalization", domain="com.onnxplug")
class FusedRMSNormalization(RMSNormalization):
    """x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * scale."""
