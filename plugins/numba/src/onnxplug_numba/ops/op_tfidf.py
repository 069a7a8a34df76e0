"""TfIdfVectorizer (int32, int64 or string input): tokens become dense ids of the pool's values
(strings through one dict probe each, integers through a sorted search), then a compiled walk of
the pool's n-gram trie counts every row; TF / IDF / TFIDF weighting is one numpy step."""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import Decline, GraphView, Node

from onnxplug_numba.kernels import tfidf as ktfidf
from onnxplug_numba.ops._base import NumbaKernel
from onnxplug_numba.provider import NumbaProvider

op = NumbaProvider.kernel
_INPUT_TYPES = frozenset({np.dtype(np.int32), np.dtype(np.int64), np.dtype(object)})


@op("TfIdfVectorizer", 9)
class TfIdfVectorizer(NumbaKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        dtype = view.dtype_of(node.inputs[0])  # none inferred (after a Tokenizer): one of the three
        if dtype is not None and dtype not in _INPUT_TYPES:
            return Decline("dtype", f"input X is {dtype}, not int32, int64 or string")
        mode = node.attr("mode")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if mode not in ("TF", "IDF", "TFIDF"):
            return Decline("attribute", f"mode {mode!r} is not one of TF, IDF, TFIDF")
        return True

    def __init__(self, node, context):
        super().__init__(node, context)
        strings = self.attr("pool_strings")
        pool = list(strings) if strings else [int(v) for v in self.attr("pool_int64s") or []]
        self._min, self._max = int(self.attr("min_gram_length")), int(self.attr("max_gram_length"))
        self._skip = int(self.attr("max_skip_count", 0))
        tokens, *self._trie = ktfidf.build_trie(pool, [int(v) for v in self.attr("ngram_counts")], self._min,
                                                self._max)
        self._tokens = tokens
        if not strings:  # integer tokens: sorted values and their ids, for np.searchsorted
            values = np.array(sorted(tokens), dtype=np.int64)
            self._values, self._value_ids = values, np.array([tokens[v] for v in values.tolist()], dtype=np.int64)
        self._index = np.asarray(self.attr("ngram_indexes"), dtype=np.int64)
        self._size = int(self._index.max(initial=-1)) + 1
        mode = self.attr("mode")
        self._mode = mode.decode() if isinstance(mode, bytes) else mode
        weights = self.attr("weights")
        self._weights = None
        if weights:  # as onnxruntime: weights[g] belongs to n-gram g, whose column is ngram_indexes[g]
            w = np.asarray(weights, dtype=np.float32)
            k = min(w.size, self._index.size)
            self._weights = np.zeros(self._size, dtype=np.float32)
            self._weights[self._index[:k]] = w[:k]

    def _ids(self, x: np.ndarray) -> np.ndarray:
        """Dense token ids of ``x`` (-1 for values not in the pool)."""
        if x.dtype == object:
            get = self._tokens.get
            return np.fromiter((get(v, -1) for v in x.reshape(-1).tolist()), dtype=np.int64,
                               count=x.size).reshape(x.shape)
        if self._values.size == 0:
            return np.full(x.shape, -1, dtype=np.int64)
        v = x.astype(np.int64)
        at = np.minimum(np.searchsorted(self._values, v), self._values.size - 1)
        return np.where(self._values[at] == v, self._value_ids[at], -1)

    def compute(self, x: np.ndarray) -> np.ndarray:
        if x.dtype not in _INPUT_TYPES:
            raise TypeError(f"TfIdfVectorizer: input X is {x.dtype}, not int32, int64 or string")
        if x.ndim > 2 or (x.ndim == 2 and x.shape[0] < 1):
            raise ValueError(f"TfIdfVectorizer: input shape must be [C] or [B, C] with B > 0, got {list(x.shape)}")
        rows = x.reshape(1, -1) if x.ndim < 2 else x
        counts = np.zeros((rows.shape[0], self._size), dtype=np.int64)
        if rows.size and self._trie[0][-1]:
            ktfidf.count_ngrams(np.ascontiguousarray(self._ids(rows)), self._min, self._max, self._skip,
                                *self._trie, self._index, counts)
        w = self._weights
        if self._mode == "TF" or (self._mode == "TFIDF" and w is None):
            y = counts.astype(np.float32)
        elif self._mode == "IDF":
            y = np.where(counts > 0, w if w is not None else np.float32(1), np.float32(0)).astype(np.float32)
        else:
            y = (w * counts).astype(np.float32)
        return y if x.ndim == 2 else y.reshape(-1)
