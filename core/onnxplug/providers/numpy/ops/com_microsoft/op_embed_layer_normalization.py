"""com.microsoft EmbedLayerNormalization: BERT's embeddings and their LayerNorm.

word_embedding[input_ids] + position_embedding[position_ids or 0..S-1] (+ segment_embedding[segment_ids]),
normalized over the hidden axis with gamma and beta. Outputs: output [B, S, H], mask_index [B] int32
(how many mask values are 1 per row; zeros without a mask) and embedding_sum (the sum before the norm)."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._norm import check_vector, normalize_rows
from onnxplug.providers.numpy.registry import op


@op("EmbedLayerNormalization", domain=DOMAIN)
class EmbedLayerNormalization(NumpyKernel):
    def compute(self, input_ids, segment_ids, word_embedding, position_embedding, segment_embedding=None,
                gamma=None, beta=None, mask=None, position_ids=None):
        if input_ids.ndim != 2:
            raise ValueError(f"{self.node.describe()}: input_ids must be [B, S], got {list(input_ids.shape)}")
        batch, seq = input_ids.shape
        check_vector(self, "gamma", gamma, word_embedding.shape[1])
        check_vector(self, "beta", beta, word_embedding.shape[1])
        if position_ids is None:
            position_ids = np.arange(seq).reshape(1, seq)
        total = self._lookup("input_ids", word_embedding, input_ids)
        total = total + self._lookup("position_ids", position_embedding, np.broadcast_to(position_ids, (batch, seq)))
        if segment_ids is not None and segment_embedding is not None:
            total += self._lookup("segment_ids", segment_embedding, segment_ids)
        y, _, _ = normalize_rows(total, gamma, beta, float(self.attr("epsilon", 1e-12)), simplified=False)
        counts = np.zeros(batch, np.int32) if mask is None else (mask == 1).sum(axis=1, dtype=np.int32)
        return y, counts, total

    def _lookup(self, name: str, table: np.ndarray, ids: np.ndarray) -> np.ndarray:
        if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
            raise ValueError(f"{self.node.describe()}: {name} out of range [0, {table.shape[0]})")
        return table[ids]
