"""com.microsoft GatherBlockQuantized: Gather along ``gather_axis`` from a block-quantized table,
dequantized: (code - zero_point) * scale, one scale (and zero point) per ``block_size`` codes along
``quantize_axis`` (onnxruntime-genai's quantized embedding tables).

uint8 data holds ``bits`` = 4 (two codes a byte, low nibble first, along quantize_axis) or 8;
zero_points are packed the same way; without them the zero point is 2^(bits-1). The rows are
gathered before dequantizing, so a large table is never expanded whole. Other data types
(int4 / uint4 tensors) and a gather_axis equal to quantize_axis are refused."""

import numpy as np

from onnxplug.errors import NotImplementedOpError
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import norm_axis
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft.op_mat_mul_n_bits import unpack_codes
from onnxplug.providers.numpy.registry import op


@op("GatherBlockQuantized", domain=DOMAIN)
class GatherBlockQuantized(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.bits, self.block = int(self.attr("bits", 4)), int(self.attr("block_size", 128))
        if self.bits not in (4, 8):
            raise NotImplementedOpError(f"{node.describe()}: attribute bits={self.bits} is not supported (4, 8)")
        if self.block < 16 or self.block & (self.block - 1):
            raise ValueError(f"{node.describe()}: block_size must be a power of 2 and at least 16, got {self.block}")

    def compute(self, data, indices, scales, zero_points=None):
        if data.dtype != np.uint8:
            raise NotImplementedOpError(f"{self.node.describe()}: data of type {data.dtype} is not supported (uint8)")
        g_axis = norm_axis(int(self.attr("gather_axis", 0)), data.ndim)
        q_axis = norm_axis(int(self.attr("quantize_axis", 1)), data.ndim)
        if g_axis == q_axis:
            raise NotImplementedOpError(f"{self.node.describe()}: gather_axis equal to quantize_axis is not supported")
        per_byte = 8 // self.bits
        width = data.shape[q_axis] * per_byte
        blocks = -(-width // self.block)
        expected = list(data.shape)
        expected[q_axis] = blocks
        if list(scales.shape) != expected:
            raise ValueError(f"{self.node.describe()}: scales must have shape {expected}, got {list(scales.shape)}")
        index = np.asarray(indices).astype(np.int64)
        count = data.shape[g_axis]
        if index.size and (index.min() < -count or index.max() >= count):
            raise ValueError(f"{self.node.describe()}: indices out of range [-{count}, {count})")
        index = np.where(index < 0, index + count, index)
        # rows first, then the codes of the gathered rows only; quantize_axis moved last meanwhile
        out_axis = q_axis + index.ndim - 1 if q_axis > g_axis else q_axis  # quantize_axis after the gather

        def gathered(t):
            return np.moveaxis(np.take(t, index, axis=g_axis), out_axis, -1)

        codes = unpack_codes(gathered(data), self.bits, width).astype(np.float32)
        if zero_points is None:
            zp = np.float32(1 << (self.bits - 1))
        else:
            zp = unpack_codes(gathered(zero_points), self.bits, blocks).astype(np.float32)
            zp = np.repeat(zp, self.block, axis=-1)[..., :width]
        values = (codes - zp) * np.repeat(gathered(scales).astype(np.float32), self.block, axis=-1)[..., :width]
        return np.ascontiguousarray(np.moveaxis(values, -1, out_axis)).astype(scales.dtype)
