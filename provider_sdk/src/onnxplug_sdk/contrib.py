"""Rules of onnxruntime's com.microsoft operators shared with the core's kernels: the additive
attention mask (``mask_bias``) and the QLinear ops' per-tensor parameters and dequantization, so a
provider's contrib kernels agree with the numpy provider's and with onnxruntime."""

from __future__ import annotations

from onnxplug.contrib_rules import EMBED_TABLES, dequantize, dequantize_tables, mask_bias, per_tensor

__all__ = ["EMBED_TABLES", "dequantize", "dequantize_tables", "mask_bias", "per_tensor"]
