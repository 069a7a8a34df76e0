import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


def _round(v: float) -> int:
    """C's round: halves away from zero."""
    return int(np.sign(v) * np.floor(abs(v) + 0.5))


@op("MaxRoiPool")
class MaxRoiPool(NumpyKernel):
    """Max over each of pooled_shape bins of each ROI (batch, x1, y1, x2, y2); empty bins give 0.

    Per ROI, rows are reduced bin by bin and then columns bin by bin (vectorised over channels).
    """

    def compute(self, x, rois):
        ph, pw = (int(v) for v in self.attr("pooled_shape"))
        scale = float(self.attr("spatial_scale", 1.0))
        n_rois = rois.shape[0]
        c, h, w = x.shape[1:]
        out = np.zeros((n_rois, c, ph, pw), dtype=x.dtype)
        for r in range(n_rois):
            b = int(rois[r, 0])
            x1, y1, x2, y2 = (_round(float(v) * scale) for v in rois[r, 1:5])
            rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
            hs = [min(max(int(np.floor(i * rh / ph)) + y1, 0), h) for i in range(ph)]
            he = [min(max(int(np.ceil((i + 1) * rh / ph)) + y1, 0), h) for i in range(ph)]
            ws = [min(max(int(np.floor(j * rw / pw)) + x1, 0), w) for j in range(pw)]
            we = [min(max(int(np.ceil((j + 1) * rw / pw)) + x1, 0), w) for j in range(pw)]
            for i in range(ph):
                if he[i] <= hs[i]:
                    continue
                rows = x[b, :, hs[i]:he[i], :].max(axis=1)  # (C, W)
                for j in range(pw):
                    if we[j] > ws[j]:
                        out[r, :, i, j] = rows[:, ws[j]:we[j]].max(axis=1)
        return out
