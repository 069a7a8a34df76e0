import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("StringSplit")
class StringSplit(NumpyKernel):
    """Split each string; Y pads rows with "" to the longest split, Z counts the pieces.

    Without a delimiter (or with ""), runs of whitespace separate pieces and ends are trimmed.
    """

    def compute(self, x):
        sep = self.attr("delimiter") or None
        maxsplit = self.attr("maxsplit")
        pieces = [s.split(sep, -1 if maxsplit is None else maxsplit) for s in x.reshape(-1)]
        counts = np.array([len(p) for p in pieces], dtype=np.int64)
        width = int(counts.max(initial=0))
        y = np.full((len(pieces), width), "", dtype=object)
        for row, p in zip(y, pieces):
            row[:len(p)] = p
        return y.reshape(*x.shape, width), counts.reshape(x.shape)
