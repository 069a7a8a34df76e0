from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("SpaceToDepth")
class SpaceToDepth(NumpyKernel):
    """Move blocksize x blocksize spatial tiles into channels: DCR (block-major) or CRD (channel-major, opset 28)."""

    def compute(self, x):
        b = int(self.attr("blocksize"))
        n, c, h, w = x.shape
        t = x.reshape(n, c, h // b, b, w // b, b)
        if self.attr("mode", "DCR") == "CRD":
            y = t.transpose(0, 1, 3, 5, 2, 4)
        else:
            y = t.transpose(0, 3, 5, 1, 2, 4)
        return y.reshape(n, c * b * b, h // b, w // b)
