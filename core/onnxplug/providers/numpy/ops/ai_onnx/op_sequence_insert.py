from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._sequence_util import as_sequence, position
from onnxplug.providers.numpy.registry import op


@op("SequenceInsert")
class SequenceInsert(NumpyKernel):
    def compute(self, sequence, tensor, pos=None):
        seq = as_sequence(sequence, "SequenceInsert input")
        at = position(pos, len(seq), len(seq), inclusive_end=True)
        return [*seq[:at], tensor, *seq[at:]]
