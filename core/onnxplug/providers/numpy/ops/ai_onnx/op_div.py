import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import QuietBinaryKernel
from onnxplug.providers.numpy.registry import op

_EXACT_IN_FLOAT64 = 2**53


@op("Div")
class Div(QuietBinaryKernel):
    def op(self, a, b):
        if a.dtype.kind not in "iu":
            return a / b
        # C semantics: the quotient truncates toward zero. Below 2**53 a float64 division truncates
        # exactly (and is far faster than numpy's integer division); larger int64 take the slow path.
        if a.dtype.itemsize < 8 or max(_magnitude(a), _magnitude(b)) < _EXACT_IN_FLOAT64:
            q = np.divide(a.astype(np.float64), b.astype(np.float64))
            return np.trunc(q, out=q) if q.ndim else np.trunc(q)  # 0-d operands give a numpy scalar
        q = a // b
        return q + ((q < 0) & (q * b != a)) if a.dtype.kind == "i" else q


def _magnitude(x: np.ndarray) -> int:
    return max(abs(int(x.min())), abs(int(x.max()))) if x.size else 0
