"""Conv, FusedConv (Conv + activation, optional residual Z) and ConvTranspose, 1-D and 2-D, float."""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node, conv_transpose_pads

from onnxplug_numba.kernels import conv as kconv
from onnxplug_numba.fusion.ops import FUSED_DOMAIN
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, all_present_same, matmul
from onnxplug_numba.ops._conv import ConvCall, ConvSpec, conv, decode, kept_conv, want_kernels
from onnxplug_numba.provider import NumbaProvider


def _spatial_rank(node: Node, view: GraphView) -> int | None:
    for name in node.inputs[:2]:
        t = view.type_of(name)
        if t is not None and t.shape is not None:
            return len(t.shape) - 2
    return None


def conv_supported(node: Node, view: GraphView) -> bool | Decline:
    """Float 1-D/2-D convs with a known rank and a valid auto_pad."""
    rank = _spatial_rank(node, view)
    if rank not in (1, 2):
        return Decline("shape", f"spatial rank {rank} (1-D and 2-D convolutions only)" if rank is not None
                       else "the spatial rank is unknown (no kernel_shape, weight rank unknown)")
    if len(node.outputs) != 1:
        return Decline("attribute", f"{len(node.outputs)} outputs (one only)")
    auto_pad = decode(node.attr("auto_pad", "NOTSET"))
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        return Decline("attribute", f"auto_pad {auto_pad!r} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER")
    return all_present_same(view, node, FLOAT_TYPES)


@NumbaProvider.kernel("Conv")
class Conv(NumbaKernel):
    """ONNX Conv: depthwise direct kernel, or im2col + BLAS; bias in the compiled epilogue."""

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self._specs: dict[int, ConvSpec] = {}
        self.constant_weight = len(node.inputs) > 1 and node.inputs[1] in context.constants
        bias = node.inputs[2] if len(node.inputs) > 2 else ""
        # constant weight and bias: each input shape's call (geometry, path, layouts) is kept
        self._calls: dict[tuple[tuple[int, ...], bool], ConvCall] | None = \
            {} if self.constant_weight and (not bias or bias in context.constants) else None
        self.act: tuple[int, float, float] = (0, 0.0, 0.0)
        if self.constant_weight:
            weight = context.constants[node.inputs[1]]
            want_kernels(context, weight, self.spec(weight.ndim - 2))

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return conv_supported(node, view)

    def spec(self, rank: int) -> ConvSpec:
        spec = self._specs.get(rank)
        if spec is None:
            spec = self._specs[rank] = ConvSpec.from_node(self.node, rank)
        return spec

    def compute(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
                z: np.ndarray | None = None) -> np.ndarray:
        if self._calls is None:
            return conv(x, w, b, self.spec(x.ndim - 2), self.threads, residual=z, act=self.act,
                        constant_weight=self.constant_weight)
        return kept_conv(self._calls, x, w, b, self.spec(x.ndim - 2), self.threads, z, self.act)


_FUSED_ACTIVATIONS = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Clip", ""}


def activation_supported(node: Node) -> bool | Decline:
    """True when the fused node's activation is one the epilogue computes, else why not."""
    if fused_activation(node) is not None:
        return True
    return Decline("attribute", f"activation {decode(node.attr('activation', ''))!r} (with its parameters) "
                                "is not one the fused epilogue computes")


def fused_activation(node: Node) -> tuple[int, float, float] | None:
    """The epilogue activation of a FusedConv/FusedGemm node (onnxruntime's attribute spelling)."""
    act = decode(node.attr("activation", ""))
    if act not in _FUSED_ACTIVATIONS:
        return None
    params = [float(p) for p in (node.attr("activation_params") or [])]
    alpha = node.attr("activation_alpha")
    beta = node.attr("activation_beta")
    if alpha is not None:
        params = [float(alpha)] + ([float(beta)] if beta is not None else [])
    if act == "":
        return 0, 0.0, 0.0
    if act == "Clip":
        lo, hi = (params + [-np.inf, np.inf][len(params):])[:2]
        return kconv.ACTIVATIONS["Clip"], lo, hi
    if act == "LeakyRelu":
        return kconv.ACTIVATIONS[act], params[0] if params else 0.01, 0.0
    if act == "HardSigmoid":
        p = params + [0.2, 0.5][len(params):]
        return kconv.ACTIVATIONS[act], p[0], p[1]
    return kconv.ACTIVATIONS[act], 0.0, 0.0


#: The epilogue's bias argument for a product without one (read only, so shared across calls).
_NO_BIAS = {np.dtype(np.float32): np.zeros(1, np.float32), np.dtype(np.float64): np.zeros(1, np.float64)}


def activation_in_place(y: np.ndarray, act: tuple[int, float, float]) -> np.ndarray:
    """``y`` (a fresh product, C-contiguous) with a fused activation ``act`` applied in place."""
    code, alpha, beta = act
    if code and y.size:
        y3 = y.reshape(1, 1, -1)
        no_bias = _NO_BIAS.get(y.dtype)
        if no_bias is None:  # (not as .get's default: that would allocate on every call)
            no_bias = np.zeros(1, y.dtype)
        kconv.epilogue(y3, no_bias, y3, False, code, alpha, beta)
    return y


@NumbaProvider.kernel("FusedConv", domain=FUSED_DOMAIN)
@NumbaProvider.kernel("FusedConv", domain="com.microsoft")
class FusedConv(Conv):
    """Conv + activation (+ Z added before it), inputs X, W, B?, Z?; attributes as Conv plus
    ``activation`` and ``activation_params`` (onnxruntime's com.microsoft FusedConv)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return conv_supported(node, view) and activation_supported(node)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.act = fused_activation(node)  # type: ignore[assignment]  # read once, not per call


@NumbaProvider.kernel("ConvTranspose")
class ConvTranspose(NumbaKernel):
    """ONNX ConvTranspose: BLAS for W^T x, then a compiled col2im scatter-add."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return conv_supported(node, view)

    def compute(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        one_d = x.ndim == 3
        rank = x.ndim - 2
        strides = [int(s) for s in (self.attr("strides") or [1] * rank)]
        dilations = [int(d) for d in (self.attr("dilations") or [1] * rank)]
        kernel = list(w.shape[2:])
        group = int(self.attr("group", 1))
        begin, _, size = conv_transpose_pads(x.shape[2:], kernel, strides, dilations, self.attr("output_padding"),
                                             self.attr("auto_pad", "NOTSET"), self.attr("pads"),
                                             self.attr("output_shape"))
        if one_d:
            x, w = x[:, :, None, :], w[:, :, None, :]
            strides, dilations, begin, size = [1, *strides], [1, *dilations], [0, *begin], [1, *size]
        n, c, h, wd = x.shape
        mg, kh, kw = w.shape[1], w.shape[2], w.shape[3]
        cg = c // group
        m = mg * group
        y = np.zeros((n, m, size[0], size[1]), dtype=x.dtype)
        self.threads.blas()
        wmat = np.ascontiguousarray(w).reshape(group, cg, mg * kh * kw)
        xc = np.ascontiguousarray(x)
        taps = kh * kw

        def work(lo: int, hi: int) -> None:  # one (image, group) product and scatter per item
            for item in range(lo, hi):
                i, g = divmod(item, group)
                cols = np.matmul(wmat[g].T, xc[i, g * cg:(g + 1) * cg].reshape(cg, h * wd))
                kconv.col2im(cols, kh, kw, h, wd, strides[0], strides[1], dilations[0], dilations[1],
                             begin[0], begin[1], y[i, g * mg:(g + 1) * mg])

        if n * group >= self.threads.count:
            self.threads.run(work, n * group, 1)
        else:  # few products: split each scatter by output channels
            for item in range(n * group):
                i, g = divmod(item, group)
                cols = matmul(wmat[g].T, xc[i, g * cg:(g + 1) * cg].reshape(cg, h * wd), self.threads)
                out = y[i, g * mg:(g + 1) * mg]
                self.threads.run(lambda lo, hi: kconv.col2im(
                    cols[lo * taps:hi * taps], kh, kw, h, wd, strides[0], strides[1], dilations[0],
                    dilations[1], begin[0], begin[1], out[lo:hi]), mg, 1)
        if b is not None:
            y += b.reshape(1, m, 1, 1).astype(y.dtype)
        return y.reshape(n, m, size[1]) if one_d else y
