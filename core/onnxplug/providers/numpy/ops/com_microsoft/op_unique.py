"""com.microsoft Unique: of a 1-D input, the unique values in order of first occurrence, the index
of each input value among them and their counts (int64) — ai.onnx Unique's (sorted=0) Y,
inverse_indices and counts."""

from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.ai_onnx.op_unique import Unique as _OnnxUnique
from onnxplug.providers.numpy.registry import op


@op("Unique", domain=DOMAIN)
class Unique(_OnnxUnique):
    def attr(self, name, default=None):
        # ai.onnx Unique's kernel reads these two; this op has neither: flattened, first-occurrence order
        return 0 if name == "sorted" else None if name == "axis" else super().attr(name, default)

    def compute(self, x):
        if x.ndim != 1:
            raise ValueError(f"{self.node.describe()}: input must be 1-D, got shape {list(x.shape)}")
        y, _, inverse, counts = super().compute(x)
        return y, inverse, counts
