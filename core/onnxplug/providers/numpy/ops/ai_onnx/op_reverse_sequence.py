import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("ReverseSequence")
class ReverseSequence(NumpyKernel):
    def compute(self, x, sequence_lens):
        batch_axis, time_axis = int(self.attr("batch_axis", 1)), int(self.attr("time_axis", 0))
        steps = x.shape[time_axis]
        lens = np.asarray(sequence_lens, dtype=np.int64).reshape(-1, 1)  # (batch, 1)
        t = np.arange(steps, dtype=np.int64).reshape(1, -1)  # (1, time)
        # Within each batch entry's length the time index is mirrored; past it, kept.
        source = np.where(t < lens, lens - 1 - t, t)  # (batch, time)
        if batch_axis > time_axis:
            source = source.T  # (time, batch)
        shape = [1] * x.ndim
        shape[batch_axis], shape[time_axis] = x.shape[batch_axis], steps
        source = np.broadcast_to(source.reshape(shape), x.shape)
        return np.take_along_axis(x, source, axis=time_axis)
