"""com.microsoft RotaryEmbedding: inputs (input, position_ids, cos_cache, sin_cache), computed by
ai.onnx RotaryEmbedding's kernel. input is [B, S, N * H] or [B, N, S, H]; position_ids [B, S], or
one value, the position of the first token (then positions run on from it). Without num_heads a
3-D input's head size is the rotated width (rotary_embedding_dim, else twice the caches' width).
is_packed_batching and a scale other than 1 are refused."""

import numpy as np

from onnxplug.errors import NotImplementedOpError
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_rotary_embedding import RotaryEmbedding as _OnnxRotaryEmbedding
from onnxplug.providers.numpy.registry import op


@op("RotaryEmbedding", domain=DOMAIN)
class RotaryEmbedding(_OnnxRotaryEmbedding):
    def __init__(self, node, context):
        super().__init__(node, context)
        if self.attr("is_packed_batching", 0):
            raise NotImplementedOpError(f"{node.describe()}: attribute is_packed_batching=1 is not supported")
        if float(self.attr("scale", 1.0)) != 1.0:
            raise NotImplementedOpError(f"{node.describe()}: attribute scale={self.attr('scale')} is not supported")

    def compute(self, x, position_ids, cos_cache, sin_cache):
        seq = x.shape[2] if x.ndim == 4 else x.shape[1]
        if position_ids.size == 1:
            position_ids = (int(position_ids.reshape(())) + np.arange(seq)).reshape(1, seq)
        if position_ids.min() < 0 or position_ids.max() >= cos_cache.shape[0]:
            raise ValueError(f"{self.node.describe()}: position_ids outside [0, {cos_cache.shape[0]})")
        if x.ndim == 4:
            return super().compute(x, cos_cache, sin_cache, position_ids)
        heads = int(self.attr("num_heads", 0))
        if heads > 0:
            head_size = x.shape[2] // heads
        else:
            head_size = int(self.attr("rotary_embedding_dim", 0)) or 2 * cos_cache.shape[1]
        if x.shape[2] % head_size:
            raise ValueError(f"{self.node.describe()}: hidden size {x.shape[2]} is not a multiple of the head "
                             f"size {head_size}")
        four = x.reshape(x.shape[0], seq, -1, head_size).transpose(0, 2, 1, 3)
        rotated = super().compute(four, cos_cache, sin_cache, position_ids)
        return np.ascontiguousarray(rotated.transpose(0, 2, 1, 3)).reshape(x.shape)
