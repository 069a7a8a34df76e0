import numpy as np

from onnxplug.ir.types import numpy_dtype
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("MelWeightMatrix")
class MelWeightMatrix(NumpyKernel):
    """[dft_length // 2 + 1, num_mel_bins] triangular filters on the mel scale (onnx.reference's bin edges)."""

    def compute(self, num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
        bins, length, rate = int(num_mel_bins), int(dft_length), int(sample_rate)
        low = 2595 * np.log1p(lower_edge_hertz / 700) / np.log(10)
        high = 2595 * np.log1p(upper_edge_hertz / 700) / np.log(10)
        edges = np.arange(bins + 2) * ((high - low) / (bins + 2)) + low
        edges = 700 * np.expm1(edges / 2595 * np.log(10))
        edges = (((length + 1) * edges) // rate).astype(np.int64)
        left, center, right = edges[:-2], edges[1:-1], edges[2:]
        j = np.arange(length // 2 + 1)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            up = np.where((j >= left) & (j <= center), (j - left) / (center - left), 0.0)
            down = np.where((j >= center) & (j < right), (right - j) / (right - center), np.nan)
        out = np.where(center == left, (j == center).astype(np.float64), up)  # a zero-width rise is a spike
        out = np.where((right > center) & ~np.isnan(down), down, out)
        return out.astype(numpy_dtype(self.attr("output_datatype", 1)))
