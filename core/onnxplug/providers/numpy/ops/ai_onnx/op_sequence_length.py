import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._sequence_util import as_sequence
from onnxplug.providers.numpy.registry import op


@op("SequenceLength")
class SequenceLength(NumpyKernel):
    def compute(self, sequence):
        return np.array(len(as_sequence(sequence, "SequenceLength input")), dtype=np.int64)
