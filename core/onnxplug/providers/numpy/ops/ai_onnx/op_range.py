import math

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Range")
class Range(NumpyKernel):
    def compute(self, start, limit, delta):
        dtype = start.dtype
        # float16/bfloat16 accumulate in float32 (opset 27 stash_type=1, the default)
        work = np.float32 if dtype.itemsize == 2 and dtype.kind not in "iu" else dtype
        s, l, d = (np.asarray(v).astype(work).reshape(()) for v in (start, limit, delta))
        count = max(math.ceil((float(l) - float(s)) / float(d)), 0)
        if dtype.kind in "iu":
            count = max(-(-(int(l) - int(s)) // int(d)), 0)  # exact for large integers
        out = s + np.arange(count, dtype=work) * d
        return np.asarray(out, dtype=dtype)
