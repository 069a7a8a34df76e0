"""The fused ops of the project's domain ``com.onnxplug`` (version 1): domains, op types and
activation parameters, shared by the optimizer that creates them and the providers that run them.

docs/fused-ops.md documents each schema; the names and attributes are stable, since providers
register kernels for them. This module imports nothing of the core, so any layer may use it.
"""

from __future__ import annotations

#: The project's domain and its one version.
OWN_DOMAIN = "com.onnxplug"
OWN_VERSION = 1
#: Domain of ops rewritten to channels-last layout for a provider that asked (same op types).
NHWC_DOMAIN = "com.onnxplug.nhwc"

FUSED_CONV = "FusedConv"
FUSED_GEMM = "FusedGemm"
FUSED_MATMUL = "FusedMatMul"
GELU = "Gelu"
BIAS_GELU = "BiasGelu"
LAYER_NORM = "LayerNormalization"
SKIP_LAYER_NORM = "SkipLayerNormalization"
RMS_NORM = "RMSNormalization"
MULTI_HEAD_ATTENTION = "MultiHeadAttention"
#: Of ``com.onnxplug.nhwc`` only: an expansion, depthwise and projection chain (channels-last).
INVERTED_BOTTLENECK = "InvertedBottleneck"

#: Every op of ``com.onnxplug`` the built-in passes create.
FUSED_OP_TYPES = (FUSED_CONV, FUSED_GEMM, FUSED_MATMUL, GELU, BIAS_GELU, LAYER_NORM,
                  SKIP_LAYER_NORM, MULTI_HEAD_ATTENTION, RMS_NORM)

#: Activations FusedConv / FusedGemm / FusedMatMul accept, with their parameter defaults.
ACTIVATION_DEFAULTS: dict[str, tuple[float, ...]] = {
    "Relu": (),
    "Sigmoid": (),
    "Tanh": (),
    "LeakyRelu": (0.01,),
    "HardSigmoid": (0.2, 0.5),
    "Clip": (float("-inf"), float("inf")),
}
