import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import scatter_cols
from onnxplug.providers.numpy.registry import op


@op("Col2Im")
class Col2Im(NumpyKernel):
    """Sum sliding-block columns (N, C * prod(block), L) back into an image (N, C, *image_shape)."""

    def compute(self, x, image_shape, block_shape):
        image = [int(v) for v in image_shape]
        block = [int(v) for v in block_shape]
        nd = len(image)
        dil = [int(v) for v in (self.attr("dilations", None) or [1] * nd)]
        strides = [int(v) for v in (self.attr("strides", None) or [1] * nd)]
        pads = [int(v) for v in (self.attr("pads", None) or [0] * 2 * nd)]
        padded = [i + pads[d] + pads[nd + d] for d, i in enumerate(image)]
        blocks = [(p - ((k - 1) * dd + 1)) // s + 1 for p, k, dd, s in zip(padded, block, dil, strides)]
        n = x.shape[0]
        c = x.shape[1] // int(np.prod(block))
        cols = x.reshape((n, c) + tuple(block) + tuple(blocks))
        img = scatter_cols(cols, padded, block, strides, dil, blocks)
        return np.ascontiguousarray(img[(Ellipsis,) + tuple(slice(pads[d], pads[d] + image[d]) for d in range(nd))])
