"""OpenCL C expressions of ONNX elementwise ops, used to generate single and fused kernels.

``expression(node, args, in_types, out_type)`` returns the C expression computing one output
element from the input elements named ``args``, or ``None`` when the op, its attributes or its
element types are not supported (the node then stays unclaimed). Operators and math functions come
from the SDK's table shared with the other generators (``onnxplug_sdk.elementwise``). Expressions
use only OpenCL builtins, so the same text serves float and double, except float32 Sigmoid and
Tanh, which call the scalar helpers of :mod:`.mlas_math` to give onnxruntime's bits.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from onnxplug_sdk import Node
from onnxplug_sdk.elementwise import (
    ARITHMETIC,
    ATTRIBUTE_DEFAULTS,
    BITWISE,
    COMPARISONS,
    FLOAT_FUNCTIONS,
    LOGIC,
    NOT,
)

from onnxplug_opencl.engine.dtypes import BOOL, FLOATS, INTEGERS, SIGNED, UNSIGNED, c_type
from onnxplug_opencl.engine.mlas_math import FLOAT32_EXPRESSIONS

Args = Sequence[str]
Types = Sequence[np.dtype]


def literal(value: float, dtype: np.dtype) -> str:
    """A C literal of ``value`` in ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype in FLOATS:
        if math.isnan(value):
            return "NAN"
        if math.isinf(value):
            return "INFINITY" if value > 0 else "(-INFINITY)"
        text = repr(float(value))
        return f"(({c_type(dtype)}){text}{'' if dtype == np.float64 else 'f'})"
    return f"(({c_type(dtype)}){int(value)})"


def _float_unary(template: str) -> Callable[[Node, Args, Types, np.dtype], str | None]:
    def make(node: Node, a: Args, t: Types, out: np.dtype) -> str | None:
        return template.format(x=a[0], T=c_type(t[0])) if t[0] in FLOATS else None
    return make


_FLOAT_UNARY = {
    **{op: f"{fn['c']}({{x}})" for op, fn in FLOAT_FUNCTIONS.items()},
    "Reciprocal": "(({T})1 / {x})",
    "Sigmoid": "(({T})1 / (({T})1 + exp(-{x})))",
    "Softsign": "({x} / (({T})1 + fabs({x})))",
    "Softplus": "({x} > 0 ? {x} + log1p(exp(-{x})) : log1p(exp({x})))",
    "Mish": "({x} * tanh({x} > 0 ? {x} + log1p(exp(-{x})) : log1p(exp({x}))))",
    "IsNaN": "isnan({x})",
}


def _attr(node: Node, name: str, default: float | None = None) -> float:
    """A float attribute; its default from the shared table (``ATTRIBUTE_DEFAULTS``) unless given."""
    if default is None:
        default = ATTRIBUTE_DEFAULTS[node.op_type][name]
    return float(node.attr(name, default))


def _unary(node: Node, a: Args, t: Types, out: np.dtype) -> str | None:
    op, x, dt = node.op_type, a[0], t[0]
    T = c_type(dt)
    lit = lambda v: literal(v, dt)  # noqa: E731
    if op in FLOAT32_EXPRESSIONS and dt == np.float32:  # onnxruntime's MLAS values, bit for bit
        return FLOAT32_EXPRESSIONS[op].format(x=x)
    if op in _FLOAT_UNARY:
        return _float_unary(_FLOAT_UNARY[op])(node, a, t, out)
    if op in ("Identity", "Dropout"):
        return x
    if op == "Abs":
        return f"fabs({x})" if dt in FLOATS else (f"(({T})abs({x}))" if dt in SIGNED else x)
    if op == "Neg":
        return f"(-{x})" if dt in FLOATS or dt in SIGNED else None
    if op == "Sign":
        return f"({x} > 0 ? {lit(1)} : ({x} < 0 ? {lit(-1)} : {lit(0)}))" if dt != BOOL else None
    if op == "Relu":
        return f"({x} > 0 ? {x} : {lit(0)})" if dt in FLOATS or dt in SIGNED else None
    if dt not in FLOATS:
        if op == "Not" and dt == BOOL:
            return f"({NOT['c']}{x})"
        if op == "BitwiseNot" and dt in INTEGERS:
            return f"(~{x})"
        return None
    if op == "LeakyRelu":
        return f"({x} >= 0 ? {x} : {lit(_attr(node, 'alpha'))} * {x})"
    if op == "Elu":
        return f"({x} >= 0 ? {x} : {lit(_attr(node, 'alpha'))} * (exp({x}) - {lit(1)}))"
    if op == "Selu":
        al, ga = lit(_attr(node, "alpha")), lit(_attr(node, "gamma"))
        return f"({x} > 0 ? {ga} * {x} : {ga} * ({al} * exp({x}) - {al}))"
    if op == "Celu":
        al = lit(_attr(node, "alpha"))
        return f"(fmax({lit(0)}, {x}) + fmin({lit(0)}, {al} * (exp({x} / {al}) - {lit(1)})))"
    if op == "ThresholdedRelu":
        return f"({x} > {lit(_attr(node, 'alpha'))} ? {x} : {lit(0)})"
    if op == "HardSigmoid":
        al, be = lit(_attr(node, "alpha")), lit(_attr(node, "beta"))
        return f"fmax({lit(0)}, fmin({lit(1)}, {al} * {x} + {be}))"
    if op == "HardSwish":
        return f"({x} * fmax({lit(0)}, fmin({lit(1)}, {x} / {lit(6)} + {lit(0.5)})))"
    if op == "Shrink":
        b, ld = lit(_attr(node, "bias")), lit(_attr(node, "lambd"))
        return f"({x} < -{ld} ? {x} + {b} : ({x} > {ld} ? {x} - {b} : {lit(0)}))"
    if op == "Gelu":
        if node.attr("approximate", "none") == "tanh":
            k = lit(math.sqrt(2 / math.pi))
            return f"({lit(0.5)} * {x} * ({lit(1)} + tanh({k} * ({x} + {lit(0.044715)} * {x} * {x} * {x}))))"
        return f"({lit(0.5)} * {x} * ({lit(1)} + erf({x} * {lit(1 / math.sqrt(2))})))"
    if op == "IsInf":
        neg, pos = (int(node.attr(name, ATTRIBUTE_DEFAULTS["IsInf"][name]))
                    for name in ("detect_negative", "detect_positive"))
        return f"(isinf({x}) && (({x} > 0 && {pos}) || ({x} < 0 && {neg})))"
    return None


def _max_min(a: str, b: str, dt: np.dtype, greater: bool) -> str:
    cmp = ">" if greater else "<"
    if dt in FLOATS:  # NaN propagates, as in numpy and onnxruntime
        return f"((isnan({a}) || {a} {cmp} {b}) ? {a} : {b})"
    return f"({a} {cmp} {b} ? {a} : {b})"


def _binary(node: Node, a: Args, t: Types, out: np.dtype) -> str | None:
    op = node.op_type
    x, y = a[0], a[1]
    dt = t[0]
    if op in ARITHMETIC and dt != BOOL and t[1] == dt:
        return f"({x} {ARITHMETIC[op]} {y})"
    if op == "Pow":
        if dt not in FLOATS and dt not in INTEGERS or t[1] == BOOL:
            return None
        if dt in FLOATS and t[1] == dt:
            return f"pow({x}, {y})"
        wide = "double" if np.dtype(np.float64) in (dt, t[1]) or dt in INTEGERS else c_type(dt)
        power = f"pow(({wide}){x}, ({wide}){y})"
        return f"rint({power})" if dt in INTEGERS else power
    if op == "PRelu" and t[1] == dt and (dt in FLOATS or dt in SIGNED):
        return f"({x} < 0 ? {y} * {x} : {x})"
    if op in COMPARISONS and t[1] == dt:
        return f"({x} {COMPARISONS[op]} {y})"
    if op in LOGIC and dt == BOOL and t[1] == BOOL:
        return f"({x} {LOGIC[op]['c']} {y})"
    if op in BITWISE and dt in INTEGERS and t[1] == dt:
        return f"({x} {BITWISE[op]} {y})"
    if op == "BitShift" and dt in UNSIGNED and t[1] == dt:
        return f"({x} {'<<' if node.attr('direction', b'LEFT') in (b'LEFT', 'LEFT') else '>>'} {y})"
    if op == "Mod" and t[1] == dt:
        if int(node.attr("fmod", 0)):
            return f"fmod({x}, {y})" if dt in FLOATS else f"({x} % {y})"
        if dt in SIGNED:  # the result takes the divisor's sign, as Python's %
            return f"(({x} % {y} != 0 && (({x} % {y} < 0) != ({y} < 0))) ? {x} % {y} + {y} : {x} % {y})"
        if dt in UNSIGNED:
            return f"({x} % {y})"
    return None


def _variadic(node: Node, a: Args, t: Types, out: np.dtype) -> str | None:
    op = node.op_type
    dt = t[0]
    if any(x != dt for x in t) or dt == BOOL or (op in ("Sum", "Mean") and dt not in FLOATS and dt not in INTEGERS):
        return None
    expr = a[0]
    for y in a[1:]:
        expr = f"({expr} + {y})" if op in ("Sum", "Mean") else _max_min(expr, y, dt, op == "Max")
    if op == "Mean":
        if dt not in FLOATS:
            return None
        expr = f"({expr} / {literal(len(a), dt)})"
    return expr


def _cast(node: Node, a: Args, t: Types, out: np.dtype) -> str | None:
    if out == BOOL:
        return f"({a[0]} != 0)"
    if t[0] in FLOATS and out in INTEGERS:
        return f"(({c_type(out)}){a[0]})"  # C truncation toward zero, as numpy's astype
    return a[0]


def _clip(node: Node, a: Args, t: Types, out: np.dtype) -> str | None:
    dt = t[0]
    if dt == BOOL:
        return None
    x = a[0]
    if node.opset < 11:
        lo, hi = _attr(node, "min", -math.inf), _attr(node, "max", math.inf)
        if dt not in FLOATS:
            return None
        return f"fmin(fmax({x}, {literal(lo, dt)}), {literal(hi, dt)})"
    present = [name for name in node.inputs[1:3]]
    args = iter(a[1:])
    lo = next(args) if len(present) > 0 and present[0] else None
    hi = next(args) if len(present) > 1 and present[1] else None
    expr = x
    if lo is not None:
        expr = f"({expr} < {lo} ? {lo} : {expr})"
    if hi is not None:
        expr = f"({expr} > {hi} ? {hi} : {expr})"
    return expr


def _where(node: Node, a: Args, t: Types, out: np.dtype) -> str | None:
    return f"({a[0]} ? {a[1]} : {a[2]})" if t[0] == BOOL and t[1] == t[2] else None


_BINARY = {"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Equal", "Less", "LessOrEqual", "Greater",
           "GreaterOrEqual", "And", "Or", "Xor", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitShift", "Mod"}
_VARIADIC = {"Max", "Min", "Sum", "Mean"}
_UNARY = set(_FLOAT_UNARY) | {"Identity", "Dropout", "Abs", "Neg", "Sign", "Relu", "Not", "BitwiseNot",
                              "LeakyRelu", "Elu", "Selu", "Celu", "ThresholdedRelu", "HardSigmoid",
                              "HardSwish", "Shrink", "Gelu", "IsInf"}
#: Every op type :func:`expression` may accept.
ELEMENTWISE_OPS = frozenset(_BINARY | _VARIADIC | _UNARY | {"Cast", "CastLike", "Clip", "Where"})


def operand_inputs(node: Node) -> list[str]:
    """The inputs whose elements the op reads: CastLike's second input and Dropout's ratio and
    training_mode only carry a type or a setting, and omitted optional inputs are skipped."""
    if node.op_type in ("CastLike", "Dropout"):
        return [node.inputs[0]]
    return [n for n in node.inputs if n]


def expression(node: Node, args: Args, in_types: Types, out_type: np.dtype) -> str | None:
    """The C expression of ``node`` over input elements ``args``, or None if unsupported."""
    op = node.op_type
    in_types = [np.dtype(x) for x in in_types]
    if node.domain not in ("", "ai.onnx") or op not in ELEMENTWISE_OPS:
        return None
    if op in _BINARY:
        return _binary(node, args, in_types, out_type) if len(args) == 2 else None
    if op in _VARIADIC:
        return _variadic(node, args, in_types, out_type) if args else None
    if op == "Cast":
        return _cast(node, args, in_types, out_type) if len(args) == 1 else None
    if op == "CastLike":
        return _cast(node, args, in_types, out_type) if len(args) == 1 else None
    if op == "Clip":
        return _clip(node, args, in_types, out_type)
    if op == "Where":
        return _where(node, args, in_types, out_type) if len(args) == 3 else None
    return _unary(node, args, in_types, out_type) if len(args) == 1 else None
