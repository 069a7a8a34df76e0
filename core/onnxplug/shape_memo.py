"""Steps whose outputs follow from the feeds' shapes alone, so a run can reuse them.

Exported models compute shapes at run time: Shape, Gather, Unsqueeze, Concat, Range... feeding
Reshape, Expand and masks. Such a step (a *memo step*) is a deterministic host op that reads a
Shape/Size of a value whose shape the feeds' shapes decide, or only values of other memo steps and
constants. A run keyed by the feeds' shapes computes them once; later runs with the same shapes
load the memo values other steps read and skip the memo steps. A value's shape is decided by the
feeds' shapes when every op on its way computes its output shape from its inputs' shapes, its
attributes and inputs that are memo values or constants (``VALUE_INPUTS``); anything else (NonZero,
control flow, an op not listed) ends that. Memo values are never written: kernels do not modify
their inputs (constants are shared by every run the same way). Graph outputs are returned as copies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from onnxplug.device import CPU

if TYPE_CHECKING:
    from onnxplug.executor import Plan, Step

#: Ops whose output shapes follow from their inputs' shapes and their attributes.
SHAPE_FROM_SHAPES = frozenset({
    "Abs", "Acos", "Acosh", "Add", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh",
    "AveragePool", "BatchNormalization", "BiasGelu", "BitShift", "Cast", "CastLike", "Ceil", "Celu",
    "Clip", "Concat", "Conv", "ConvTranspose", "Cos", "Cosh", "CumSum", "DepthToSpace", "Div", "Einsum",
    "Elu", "Equal", "Erf", "Exp", "FastGelu", "Flatten", "Floor", "FusedConv", "FusedGemm", "FusedMatMul",
    "Gather", "GatherElements", "GatherND", "Gelu", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "Greater",
    "GreaterOrEqual", "GroupNormalization", "HardSigmoid", "HardSwish", "Hardmax", "Identity",
    "InstanceNormalization", "IsInf", "IsNaN", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual",
    "Log", "LogSoftmax", "LpNormalization", "MatMul", "Max", "MaxPool", "Mean", "Min", "Mish", "Mod", "Mul",
    "Neg", "Not", "Or", "PRelu", "Pow", "QuickGelu", "RMSNormalization", "Reciprocal", "Relu", "Round",
    "Selu", "Shrink", "Sigmoid", "Sign", "SimplifiedLayerNormalization", "Sin", "Sinh",
    "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "Softmax", "Softplus", "Softsign",
    "SpaceToDepth", "Sqrt", "Sub", "Sum", "Swish", "Tan", "Tanh", "ThresholdedRelu", "Transpose", "Trilu",
    "Where", "Xor", "ScatterElements", "ScatterND", "Shape", "Size",
})
#: Ops whose output shapes also follow from the values of these inputs (positions).
VALUE_INPUTS = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Pad": (1, 3), "Range": (0, 1, 2),
    "ConstantOfShape": (0,), "Squeeze": (1,), "Unsqueeze": (1,), "Split": (1,), "Resize": (1, 2, 3),
    "Upsample": (1,), "OneHot": (1,), "TopK": (1,), "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,),
    "ReduceMin": (1,), "ReduceProd": (1,), "ReduceL1": (1,), "ReduceL2": (1,), "ReduceLogSum": (1,),
    "ReduceLogSumExp": (1,), "ReduceSumSquare": (1,),
}
#: Domains whose ops are deterministic functions of their inputs (the optimizer's fused ops included).
_DOMAINS = frozenset({"", "ai.onnx", "com.microsoft", "com.onnxplug"})
#: Standard ops whose results are not a function of their inputs, or that a run may change.
_NOT_MEMO = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                       "Bernoulli", "Dropout", "If", "Loop", "Scan"})
#: Largest total size of one run's memo values that is kept (bytes).
MAX_KEPT_BYTES = 1 << 20
#: Feed-shape keys kept per plan (all dropped when full: a model fed many shapes recomputes).
MAX_KEYS = 16


def _op_types(step: Step) -> list[tuple[str, str]]:
    """(domain, op type) of each node a step runs; fused steps list their op types."""
    node = getattr(step.kernel, "node", None)
    if step.kind == "node" and node is not None:
        return [(node.domain or "", node.op_type)]
    return [("", op) for op in step.op_type.split("+")] if step.op_type else []


def memo_steps(plan: Plan) -> tuple[set[int], set[Any]]:
    """(indices of the memo steps, the memo values read by other steps or returned); empty when
    the plan is not a top-level host plan."""
    if plan.outer or plan.body or any(not isinstance(n, str) for n in plan.inputs):
        return set(), set()
    constants = set(plan.constants)
    decided = set(plan.inputs) | constants  # values whose shapes the feeds' shapes decide
    memo: set[Any] = set()
    indices: set[int] = set()
    for index, step in enumerate(plan.steps):
        ops = _op_types(step)
        inputs = [n for n in step.inputs if n]
        if _is_memo(step, ops, inputs, memo, constants, decided):
            indices.add(index)
            memo.update(o for o in step.outputs if o)
            decided.update(o for o in step.outputs if o)
        elif _shapes_follow(step, ops, decided, memo, constants):
            decided.update(o for o in step.outputs if o)
    exported = {n for i, s in enumerate(plan.steps) if i not in indices for n in (*s.inputs, *s.scope_values)
                if n in memo} | {v for v in plan.outputs.values() if v in memo}
    return indices, exported


def _is_memo(step: Step, ops: list[tuple[str, str]], inputs: list[Any], memo: set, constants: set,
             decided: set) -> bool:
    if step.kind == "copy" or step.kernel is None or step.scope_values or step.provider.device != CPU:
        return False
    if getattr(step.provider.allocator, "tracked", False) or not ops:
        return False
    if any(d not in _DOMAINS or op in _NOT_MEMO or "Sequence" in op for d, op in ops):
        return False
    if len(ops) == 1 and ops[0][1] in ("Shape", "Size"):
        return bool(inputs) and inputs[0] in decided
    return any(n in memo for n in inputs) and all(n in memo or n in constants for n in inputs)


def _shapes_follow(step: Step, ops: list[tuple[str, str]], decided: set, memo: set, constants: set) -> bool:
    """Whether the step's output shapes follow from the feeds' shapes."""
    if step.kind == "copy" or not ops or any(d not in _DOMAINS for d, _ in ops):
        return False
    inputs = list(step.inputs)
    if not all(n in decided for n in inputs if n):
        return False
    if step.kind != "node":
        return all(op in SHAPE_FROM_SHAPES for _, op in ops)
    op = ops[0][1]
    if op in SHAPE_FROM_SHAPES:
        return True
    positions = VALUE_INPUTS.get(op)
    if positions is None:
        return False
    return all(not inputs[p] or inputs[p] in memo or inputs[p] in constants for p in positions if p < len(inputs))


class Memo:
    """The memo values of a plan by feed shapes: ``get(key)`` a tuple or None, ``keep(key, values)``."""

    def __init__(self) -> None:
        self.kept: dict[tuple, tuple] = {}

    def get(self, key: tuple) -> tuple | None:
        return self.kept.get(key)

    def keep(self, key: tuple, values: Iterable[Any]) -> None:
        values = tuple(values)
        if sum(getattr(v, "nbytes", 1 << 30) for v in values) > MAX_KEPT_BYTES:
            return  # a value without a size (a sequence) or too large to keep
        if len(self.kept) >= MAX_KEYS:
            self.kept.clear()
        self.kept[key] = values


def own(value: Any) -> Any:
    """A memo value returned as a graph output: a copy, so the caller may change it."""
    copy = getattr(value, "copy", None)
    return copy() if copy is not None else value
