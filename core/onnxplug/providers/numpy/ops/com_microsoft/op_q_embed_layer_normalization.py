"""com.microsoft QEmbedLayerNormalization: EmbedLayerNormalization whose tables, gamma and beta are
quantized (8-bit, per-tensor scale and zero point each); they are dequantized ((q - zero_point) *
scale, float32) and EmbedLayerNormalization's kernel runs. Outputs: output and mask_index."""

from onnxplug.contrib_rules import dequantize_tables
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft.op_embed_layer_normalization import EmbedLayerNormalization
from onnxplug.providers.numpy.registry import op


@op("QEmbedLayerNormalization", domain=DOMAIN)
class QEmbedLayerNormalization(EmbedLayerNormalization):
    def compute(self, input_ids, segment_ids, *rest):
        rest = list(rest) + [None] * (16 - len(rest))
        quantized, mask, scales, zero_points = rest[0:5], rest[5], rest[6:11], rest[11:16]
        tables = dequantize_tables(self, quantized, scales, zero_points)
        word, position, segment, gamma, beta = tables
        y, mask_index, _ = super().compute(input_ids, segment_ids, word, position, segment, gamma, beta, mask)
        return y, mask_index
