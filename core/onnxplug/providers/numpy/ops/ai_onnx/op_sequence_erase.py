from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._sequence_util import as_sequence, position
from onnxplug.providers.numpy.registry import op


@op("SequenceErase")
class SequenceErase(NumpyKernel):
    def compute(self, sequence, pos=None):
        seq = as_sequence(sequence, "SequenceErase input")
        at = position(pos, len(seq), len(seq) - 1)
        return [*seq[:at], *seq[at + 1:]]
