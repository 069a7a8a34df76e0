import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML
from onnxplug.providers.numpy.registry import op

#: Inputs up to this many values are looked up one by one in a dict; larger ones by a sorted search.
_DICT_LOOKUP = 256


@op("OneHotEncoder", domain=ML)
class OneHotEncoder(NumpyKernel):
    """x -> x.shape + [len(categories)] float32 one-hot rows; unknown values give zeros (or fail if zeros=0).

    A value's row is read from an identity matrix with a final zero row (position -1 for unknown
    values); a category listed twice takes its first position.
    """

    def __init__(self, node, context):
        super().__init__(node, context)
        strings = self.attr("cats_strings")
        self._strings = bool(strings)
        cats = list(strings) if strings else [int(c) for c in self.attr("cats_int64s") or []]
        self._table: dict = {}
        for i, k in enumerate(cats):
            self._table.setdefault(k, i)
        self._rows = np.vstack([np.eye(len(cats), dtype=np.float32), np.zeros((1, len(cats)), np.float32)])
        if not self._strings:
            keys = np.array(list(self._table), dtype=np.int64)
            order = np.argsort(keys, kind="stable")
            self._sorted = keys[order]
            self._sorted_pos = np.array(list(self._table.values()), dtype=np.int64)[order]
        self._zeros = bool(self.attr("zeros", 1))

    def _positions(self, values: np.ndarray) -> np.ndarray:
        if self._strings or values.size <= _DICT_LOOKUP:
            get = self._table.get
            flat = [get(v, -1) for v in values.reshape(-1).tolist()]
            return np.array(flat, dtype=np.int64).reshape(values.shape)
        idx = np.minimum(np.searchsorted(self._sorted, values), max(self._sorted.size - 1, 0))
        if self._sorted.size == 0:
            return np.full(values.shape, -1, np.int64)
        return np.where(self._sorted[idx] == values, self._sorted_pos[idx], -1)

    def compute(self, x):
        values = x if self._strings else x.astype(np.int64)
        pos = self._positions(values)
        if not self._zeros and (pos < 0).any():
            bad = values.reshape(-1)[np.flatnonzero(pos.reshape(-1) < 0)[0]]
            raise ValueError(f"OneHotEncoder: value {bad!r} is not a category and zeros=0")
        return self._rows[pos]
