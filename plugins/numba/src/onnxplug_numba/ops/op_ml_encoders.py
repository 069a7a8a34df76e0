"""OneHotEncoder (ai.onnx.ml): values become category positions (strings by one dict probe each,
numbers truncated to int64 and found by a sorted search), then a compiled loop writes the rows."""

from __future__ import annotations

import numpy as np
from numba import njit
from onnxplug_sdk import Decline, GraphView, Node
from onnxplug_sdk.ml import ML

from onnxplug_numba.ops._base import NumbaKernel
from onnxplug_numba.provider import NumbaProvider

op = NumbaProvider.kernel
_NUMBERS = frozenset(np.dtype(t) for t in (np.int32, np.int64, np.float32, np.float64))


@njit(nogil=True, cache=True)
def one_hot_rows(pos, out):
    """out[i, pos[i]] = 1 where pos[i] >= 0 (``out`` zero-filled); the first i whose pos is -1, or -1."""
    unknown = -1
    for i in range(pos.size):
        p = pos[i]
        if p >= 0:
            out[i, p] = 1.0
        elif unknown < 0:
            unknown = i
    return unknown


@op("OneHotEncoder", domain=ML)
class OneHotEncoder(NumbaKernel):
    """x -> x.shape + [len(categories)] float32 one-hot rows; unknown values give zeros (or fail if zeros=0)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        dtype = view.dtype_of(node.inputs[0])
        if bool(node.attr("cats_strings")):
            ok, wanted = dtype in (None, np.dtype(object)), "string (the categories are strings)"
        else:
            ok, wanted = dtype is None or dtype in _NUMBERS, "int32, int64, float32 or float64"
        return True if ok else Decline("dtype", f"input X is {dtype}, not {wanted}")

    def __init__(self, node, context):
        super().__init__(node, context)
        strings = self.attr("cats_strings")
        self._strings = bool(strings)
        cats = list(strings) if strings else [int(v) for v in self.attr("cats_int64s") or []]
        self._count = len(cats)
        self._table: dict = {}
        for i, c in enumerate(cats):
            self._table.setdefault(c, i)
        if not self._strings:
            values = np.array(sorted(self._table), dtype=np.int64)
            self._values, self._ids = values, np.array([self._table[v] for v in values.tolist()], dtype=np.int64)

    def _positions(self, x: np.ndarray) -> np.ndarray:
        if self._strings:
            get = self._table.get
            return np.fromiter((get(v, -1) for v in x.reshape(-1).tolist()), dtype=np.int64, count=x.size)
        v = x.reshape(-1).astype(np.int64)
        if self._values.size == 0:
            return np.full(v.shape, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._values, v), self._values.size - 1)
        return np.where(self._values[at] == v, self._ids[at], -1)

    def compute(self, x: np.ndarray) -> np.ndarray:
        if (x.dtype == object) != self._strings:
            raise TypeError(f"OneHotEncoder: input X is {x.dtype}, the categories are "
                            f"{'strings' if self._strings else 'integers'}")
        pos = self._positions(x)
        out = np.zeros((x.size, self._count), dtype=np.float32)
        unknown = one_hot_rows(pos, out)
        if unknown >= 0 and not self.attr("zeros", 1):
            raise ValueError(f"OneHotEncoder: value {x.reshape(-1)[unknown]!r} is not a category and zeros=0")
        return out.reshape(*x.shape, self._count)
