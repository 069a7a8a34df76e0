"""com.microsoft NGramRepeatBlock (generation loops): scores [B, vocab] with -inf for every token that
would repeat an n-gram of input_ids [B, S] (``ngram_size``): a token t following, somewhere in the
row, the same ngram_size - 1 tokens that end the row."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op


@op("NGramRepeatBlock", domain=DOMAIN)
class NGramRepeatBlock(NumpyKernel):
    def compute(self, input_ids, scores):
        n = int(self.attr("ngram_size", 0))
        if n <= 0 or input_ids.ndim != 2 or scores.ndim != 2 or input_ids.shape[0] != scores.shape[0]:
            raise ValueError(f"{self.node.describe()}: needs ngram_size > 0, input_ids [B, S] and scores [B, V]; got "
                             f"{n}, {list(input_ids.shape)}, {list(scores.shape)}")
        out = scores.copy()
        seq = input_ids.shape[1]
        if seq < n:  # no complete n-gram yet
            return out
        windows = np.lib.stride_tricks.sliding_window_view(input_ids, n, axis=1)  # [B, S - n + 1, n]
        tail = input_ids[:, seq - n + 1:]  # the last n - 1 tokens
        hits = (windows[:, :, :-1] == tail[:, None, :]).all(axis=-1)
        rows, starts = np.nonzero(hits)
        banned = windows[rows, starts, -1]
        if banned.size and (banned.min() < 0 or banned.max() >= scores.shape[1]):
            raise ValueError(f"{self.node.describe()}: token ids outside the {scores.shape[1]} scores")
        out[rows, banned] = -np.inf
        return out
