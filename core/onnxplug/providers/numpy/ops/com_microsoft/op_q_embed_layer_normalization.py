"""com.microsoft QEmbedLayerNormalization: EmbedLayerNormalization whose tables, gamma and beta are
quantized (8-bit, per-tensor scale and zero point each); they are dequantized ((q - zero_point) *
scale, float32) and EmbedLayerNormalization's kernel runs. Outputs: output and mask_index."""

import numpy as np

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.contrib_rules import dequantize, per_tensor
from onnxplug.providers.numpy.ops.com_microsoft.op_embed_layer_normalization import EmbedLayerNormalization
from onnxplug.providers.numpy.registry import op

_TABLES = ("word_embedding", "position_embedding", "segment_embedding", "gamma", "beta")


@op("QEmbedLayerNormalization", domain=DOMAIN)
class QEmbedLayerNormalization(EmbedLayerNormalization):
    def compute(self, input_ids, segment_ids, *rest):
        rest = list(rest) + [None] * (16 - len(rest))
        quantized, mask, scales, zero_points = rest[0:5], rest[5], rest[6:11], rest[11:16]
        tables = []
        for name, q, scale, zero_point in zip(_TABLES, quantized, scales, zero_points):
            if q is None:
                tables.append(None)
                continue
            if scale is None:
                raise ValueError(f"{self.node.describe()}: {name} needs its scale")
            tables.append(dequantize(q, per_tensor(self, f"{name}_scale", scale),
                                     per_tensor(self, f"{name}_zero_point", zero_point)).astype(np.float32))
        word, position, segment, gamma, beta = tables
        y, mask_index, _ = super().compute(input_ids, segment_ids, word, position, segment, gamma, beta, mask)
        return y, mask_index
