import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


def _axis_samples(start: float, bin_size: float, bins: int, grid: int, size: int):
    """Bilinear taps of the (bins, grid) sample positions along one axis.

    Returns (low, high, w_low, w_high, valid), each (bins, grid): positions beyond [-1, size]
    are invalid; others clamp at 0 and at the last pixel as onnxruntime does.
    """
    pos = start + np.arange(bins)[:, None] * bin_size + (np.arange(grid)[None, :] + 0.5) * bin_size / grid
    valid = (pos >= -1.0) & (pos <= size)
    pos = np.maximum(pos, 0.0)
    low = np.floor(pos).astype(np.int64)
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    pos = np.where(at_end, low, pos)
    frac = pos - low
    return low, high, 1.0 - frac, frac, valid


@op("RoiAlign")
class RoiAlign(NumpyKernel):
    """Average or max of bilinear samples on a regular grid inside each output bin of each ROI.

    One Python iteration per ROI (the sampling grid size depends on the ROI); everything inside is
    vectorised over channels, bins and samples.
    """

    def compute(self, x, rois, batch_indices):
        xw = widen(x)
        ph, pw = int(self.attr("output_height", 1)), int(self.attr("output_width", 1))
        ratio = int(self.attr("sampling_ratio", 0))
        scale = float(self.attr("spatial_scale", 1.0))
        max_mode = self.attr("mode", "avg") == "max"
        half_pixel = self.node.opset >= 16 and self.attr("coordinate_transformation_mode", "half_pixel") == "half_pixel"
        offset = 0.5 if half_pixel else 0.0
        n_rois = rois.shape[0]
        c, h, w = x.shape[1:]
        out = np.zeros((n_rois, c, ph, pw), dtype=xw.dtype)
        for r in range(n_rois):
            x1, y1, x2, y2 = (float(v) * scale - offset for v in rois[r])
            rh, rw = y2 - y1, x2 - x1
            if not half_pixel:  # malformed ROIs become 1x1
                rh, rw = max(rh, 1.0), max(rw, 1.0)
            gh = ratio if ratio > 0 else int(np.ceil(rh / ph))
            gw = ratio if ratio > 0 else int(np.ceil(rw / pw))
            if gh <= 0 or gw <= 0:
                continue
            ylo, yhi, wyl, wyh, vy = _axis_samples(y1, rh / ph, ph, gh, h)
            xlo, xhi, wxl, wxh, vx = _axis_samples(x1, rw / pw, pw, gw, w)
            img = xw[int(batch_indices[r])]  # (C, H, W)
            valid = vy[:, :, None, None] & vx[None, None]  # (ph, gh, pw, gw)
            terms = []
            for yi, wy in ((ylo, wyl), (yhi, wyh)):
                for xi, wx in ((xlo, wxl), (xhi, wxh)):
                    weight = np.where(valid, wy[:, :, None, None] * wx[None, None], 0.0).astype(xw.dtype)
                    vals = img[:, yi[:, :, None, None], xi[None, None]]  # (C, ph, gh, pw, gw)
                    terms.append(vals * weight)
            if max_mode:
                best = np.maximum(np.maximum(terms[0], terms[1]), np.maximum(terms[2], terms[3]))
                out[r] = best.max(axis=(2, 4))
            else:
                out[r] = (terms[0] + terms[1] + terms[2] + terms[3]).sum(axis=(2, 4)) / max(gh * gw, 1)
        return np.asarray(out, dtype=x.dtype)
