"""RMSNorm fusion: the primitive spelling ``x / sqrt(mean(x^2) + eps) * gamma`` over trailing axes
(Llama's and T5's RMSNorm as exported: Pow or Mul for the square, ReduceMean, Add, Sqrt, then Div,
Div(1, .) or Reciprocal times x, then the optional Mul by gamma) becomes one RMSNormalization: the
standard ai.onnx op when the model imports opset >= 23, else the com.onnxplug op of the same schema.
x may have other readers (the residual); every intermediate must be private to the pattern."""

from __future__ import annotations

import numpy as np

from onnxplug.ir import Node
from onnxplug.optimizer.fused_ops import RMS_NORM
from onnxplug.optimizer.pass_base import RewriteContext
from onnxplug.optimizer.passes.gelu_fusion import with_scalar
from onnxplug.optimizer.passes.layer_norm_fusion import LayerNormFusion, _affine, replace_with_norm
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel

#: The default-domain opset from which RMSNormalization is a standard op.
STANDARD_RMS_NORM_OPSET = 23


def _squared(index: GraphIndex, node: Node) -> str | None:
    """x when ``node`` is Pow(x, 2) or Mul(x, x)."""
    power = with_scalar(index, node, "Pow")
    if power is not None and power[1] == 2.0 and node.inputs[0] == power[0]:
        return power[0]
    if node.op_type == "Mul" and node.domain == "" and len(node.inputs) == 2 and node.inputs[0] == node.inputs[1]:
        return node.inputs[0]
    return None


def _scaled_by_inverse(index: GraphIndex, x: str, std: str) -> list[Node] | None:
    """Div(x, std), Mul(x, Div(1, std)) or Mul(x, Reciprocal(std)), the nodes in order."""
    node = index.only_consumer(std)
    if node is None or node.domain != "":
        return None
    if node.op_type == "Div" and node.inputs == [x, std]:
        return [node]
    if node.op_type == "Div" and node.inputs[1] == std and index.constant(node.inputs[0]) is not None:
        one = index.constant(node.inputs[0])
        if one.size != 1 or float(one.reshape(-1)[0]) != 1.0:
            return None
    elif node.op_type != "Reciprocal":
        return None
    mul = index.only_consumer(node.outputs[0])
    if mul is None or mul.op_type != "Mul" or mul.domain != "" or sorted(mul.inputs) != sorted([x, node.outputs[0]]):
        return None
    return [node, mul]


class RMSNormFusion(LayerNormFusion):
    """Fuse RMSNorm spelled with Pow/ReduceMean/Add/Sqrt/Div/Mul (LayerNormFusion's walk over the
    ReduceMeans, its own match and replacement)."""

    level = GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    changes = "primitive RMSNorm -> RMSNormalization (ai.onnx from opset 23, else com.onnxplug)"
    order = 51

    @staticmethod
    def _replace(index: GraphIndex, context: RewriteContext, mean: Node, k: int, match: tuple) -> bool:
        x, output, nodes, gamma, epsilon = match
        return replace_with_norm(index, context, RMS_NORM, STANDARD_RMS_NORM_OPSET, f"{mean.name}_rmsnorm",
                                 x, [("scale", gamma)], output, nodes, {"axis": -k, "epsilon": epsilon})

    @staticmethod
    def _match(index: GraphIndex, mean: Node, k: int) -> tuple | None:
        square = index.producer.get(mean.inputs[0])
        x = _squared(index, square) if square is not None else None
        if x is None or not index.private(mean.inputs[0], mean):
            return None
        shifted = index.only_consumer(mean.outputs[0])
        eps = with_scalar(index, shifted, "Add")
        if shifted is None or eps is None or eps[0] != mean.outputs[0] or not 0 < eps[1] < 1e-2:
            return None
        sqrt = index.only_consumer(shifted.outputs[0])
        if sqrt is None or sqrt.op_type != "Sqrt" or sqrt.domain != "":
            return None
        scaled = _scaled_by_inverse(index, x, sqrt.outputs[0])
        if scaled is None:
            return None
        nodes = [square, mean, shifted, sqrt, *scaled]
        shape = index.shape_of(x)
        dtype = index.dtype_of(x)
        if shape is None or dtype not in (np.dtype(np.float32), np.dtype(np.float64)) \
                or not all(isinstance(d, int) for d in shape[-k:]):
            return None
        norm_shape = tuple(int(d) for d in shape[-k:])
        last, gamma = scaled[-1], np.ones(norm_shape, dtype)
        weighted = _affine(index, last.outputs[0], "Mul", norm_shape)
        if weighted is not None:
            last, gamma = weighted
            nodes.append(last)
        if gamma.dtype != dtype:
            return None
        return x, last.outputs[0], nodes, np.ascontiguousarray(gamma), float(eps[1])


PASSES = [RMSNormFusion]
