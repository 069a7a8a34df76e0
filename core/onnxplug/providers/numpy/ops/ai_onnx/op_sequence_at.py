from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._sequence_util import as_sequence, position
from onnxplug.providers.numpy.registry import op


@op("SequenceAt")
class SequenceAt(NumpyKernel):
    def compute(self, sequence, pos):
        seq = as_sequence(sequence, "SequenceAt input")
        return seq[position(pos, len(seq), 0)]
