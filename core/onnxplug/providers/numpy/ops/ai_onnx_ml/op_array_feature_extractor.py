import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.ml.scores import ML
from onnxplug.providers.numpy.registry import op


@op("ArrayFeatureExtractor", domain=ML)
class ArrayFeatureExtractor(NumpyKernel):
    """The last-axis elements at ``indices`` (flattened); a 1-D input gives one row, as onnxruntime."""

    def compute(self, x, indices):
        idx = indices.reshape(-1).astype(np.int64, copy=False)
        try:  # take's own check (mode "raise") is the op's: an index below -n or from n on
            out = np.take(x, idx, axis=-1)
        except IndexError:
            raise IndexError(f"ArrayFeatureExtractor: index out of range for last dimension {x.shape[-1]}: "
                             f"{idx.tolist()}") from None
        return out.reshape(1, -1) if x.ndim == 1 else out
