import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("AffineGrid")
class AffineGrid(NumpyKernel):
    """Sampling grid (N, *spatial, 2|3) = theta @ [x, y(, z), 1] over normalised output coordinates."""

    def compute(self, theta, size):
        spatial = [int(v) for v in np.asarray(size).reshape(-1)[2:]]
        align = bool(self.attr("align_corners", 0))
        axes = []
        for d in spatial:
            if align:
                axes.append(np.linspace(-1.0, 1.0, d) if d > 1 else np.zeros(1))
            else:
                axes.append((np.arange(d) * 2.0 + 1.0) / d - 1.0)
        mesh = np.meshgrid(*axes, indexing="ij")  # (D,) H, W order
        # homogeneous coordinates ordered x (last axis) first: [x, y, (z), 1]
        base = np.stack([m.reshape(-1) for m in mesh[::-1]] + [np.ones(mesh[0].size)], axis=1)
        grid = np.matmul(base.astype(theta.dtype), theta.transpose(0, 2, 1))
        return grid.reshape((theta.shape[0],) + tuple(spatial) + (len(spatial),))
