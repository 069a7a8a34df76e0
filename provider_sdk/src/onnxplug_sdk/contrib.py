"""Rules of onnxruntime's com.microsoft operators shared with the core's kernels: the additive
attention mask (``mask_bias``), the QLinear ops' per-tensor parameters and dequantization, and the
broadcasting form of com.onnxplug MultiHeadAttention, so a provider's kernels agree with the numpy
provider's and with onnxruntime."""

from __future__ import annotations

from onnxplug.contrib_rules import (EMBED_TABLES, attention_broadcast, attention_broadcasts, dequantize,
                                    dequantize_tables, mask_bias, per_tensor)

__all__ = ["EMBED_TABLES", "attention_broadcast", "attention_broadcasts", "dequantize", "dequantize_tables",
           "mask_bias", "per_tensor"]
