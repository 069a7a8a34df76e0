import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("RotaryEmbedding")
class RotaryEmbedding(NumpyKernel):
    """Rotate the first rotary_embedding_dim features of each head by (cos, sin) at each position.

    Input is (B, H, S, D) or (B, S, H * D) with num_heads; halves are paired, or even/odd features
    when ``interleaved``.
    """

    def compute(self, x, cos_cache, sin_cache, position_ids=None):
        four_d = x.ndim == 4
        if four_d:
            t = x.transpose(0, 2, 1, 3)  # (B, S, H, D)
        else:
            heads = int(self.attr("num_heads", 0))
            if heads <= 0:
                raise ValueError(f"{self.node.describe()}: num_heads is required for 3-D input")
            t = x.reshape(x.shape[0], x.shape[1], heads, -1)
        dim = int(self.attr("rotary_embedding_dim", 0)) or t.shape[-1]
        half = dim // 2
        if position_ids is not None:
            cos_cache, sin_cache = cos_cache[position_ids], sin_cache[position_ids]
        if cos_cache.shape[-1] != half or sin_cache.shape[-1] != half:
            raise ValueError(f"{self.node.describe()}: cos/sin caches must have {half} features, "
                             f"got {cos_cache.shape[-1]} and {sin_cache.shape[-1]}")
        cos = cos_cache[..., None, :].astype(x.dtype, copy=False)  # (B|1, S, 1, half)
        sin = sin_cache[..., None, :].astype(x.dtype, copy=False)
        out = t.copy()
        if self.attr("interleaved", 0):
            x1, x2 = t[..., 0:dim:2], t[..., 1:dim:2]
            out[..., 0:dim:2] = cos * x1 - sin * x2
            out[..., 1:dim:2] = sin * x1 + cos * x2
        else:
            x1, x2 = t[..., :half], t[..., half:dim]
            out[..., :half] = cos * x1 - sin * x2
            out[..., half:dim] = sin * x1 + cos * x2
        return out.transpose(0, 2, 1, 3).copy() if four_d else out.reshape(x.shape)
