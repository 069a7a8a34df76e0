import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML
from onnxplug.providers.numpy.registry import op


@op("DictVectorizer", domain=ML)
class DictVectorizer(NumpyKernel):
    """A map -> [1, len(vocabulary)] row of its values (0 / "" for absent keys).

    A sequence of maps gives one row per map. Python floats (the values a map of float carries
    once fed from Python) give float32, Python ints int64; numpy scalars keep their type.
    """

    def compute(self, x):
        vocab = self.attr("string_vocabulary") or self.attr("int64_vocabulary") or []
        maps = x if isinstance(x, list) else [x]
        sample = next((v for m in maps for v in m.values()), 0.0)
        if isinstance(sample, str):
            dtype = np.dtype(object)
        elif isinstance(sample, (bool, int, float)):
            dtype = np.dtype(np.int64 if isinstance(sample, int) else np.float32)
        else:
            dtype = np.asarray(sample).dtype
        fill = "" if dtype == object else 0
        return np.array([[m.get(k, fill) for k in vocab] for m in maps], dtype=dtype).reshape(len(maps), len(vocab))
