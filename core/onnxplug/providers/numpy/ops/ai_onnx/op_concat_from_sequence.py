import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._sequence_util import as_sequence
from onnxplug.providers.numpy.registry import op


@op("ConcatFromSequence")
class ConcatFromSequence(NumpyKernel):
    def compute(self, sequence):
        seq = as_sequence(sequence, "ConcatFromSequence input")
        if not seq:
            raise ValueError("ConcatFromSequence needs a non-empty sequence")
        axis = self.attr("axis")
        if self.attr("new_axis", 0):
            return np.stack(seq, axis=axis)
        return np.concatenate(seq, axis=axis)
