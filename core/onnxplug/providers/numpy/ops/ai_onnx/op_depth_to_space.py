from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("DepthToSpace")
class DepthToSpace(NumpyKernel):
    """Move blocks of channels into blocksize x blocksize spatial tiles (DCR or CRD order)."""

    def compute(self, x):
        b = int(self.attr("blocksize"))
        n, c, h, w = x.shape
        if self.attr("mode", "DCR") == "CRD":
            y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        else:
            y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        return y.reshape(n, c // (b * b), h * b, w * b)
