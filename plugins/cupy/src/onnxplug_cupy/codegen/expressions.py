"""Elementwise ONNX ops as CUDA C expressions.

:func:`step_for` turns a node into a :class:`Step` (op, attributes, dtypes), or None for anything
the generator cannot compute exactly (dtype, attribute, opset); such nodes are not claimed.
:func:`expression` writes a step's C expression over the C expressions of its arguments.
Operators, math functions and attribute readers come from the SDK's table shared with the other
generators (``onnxplug_sdk.elementwise``); ``FUSED_DOMAIN`` is its fused-op domain.
Everything here is pure: no CuPy, no device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from onnxplug_sdk.elementwise import (
    ARITHMETIC,
    BITWISE,
    COMPARISONS,
    FLOAT_FUNCTIONS,
    FUSED_DOMAIN,
    GELU_CUBIC,
    GELU_SQRT_2_OVER_PI,
    GELU_SQRT_HALF,
    LOGIC,
    NOT,
    attrs_of,
    gelu_attrs,
    mod_attrs,
    read_attrs,
    shift_attrs,
)

from onnxplug_cupy.codegen.dtypes import (
    ALL,
    BOOL,
    C_TYPES,
    FLOATS,
    INTS,
    NUMERIC,
    SIGNED,
    UNSIGNED,
    literal,
    math_fn,
)



@dataclass(frozen=True)
class Step:
    """One elementwise op of a program: ``out = op(args)``; ``None`` marks an omitted input."""

    op: str
    args: tuple[str | None, ...]
    arg_dtypes: tuple[str | None, ...]
    out: str
    dtype: str  # the result's numpy dtype name
    attrs: tuple[tuple[str, Any], ...] = ()

    def attr(self, name: str) -> Any:
        """An attribute value the rule read from the node."""
        return dict(self.attrs)[name]


Expr = Callable[[Sequence[str], dict, str], str]


@dataclass(frozen=True)
class OpRule:
    """How one op type computes: its expression, accepted dtypes of input 0 and arity.

    ``result``: ``"same"`` (dtype of the first data input), ``"bool"``, or ``"x1"`` (Where).
    Arguments are cast to the result type before the expression sees them, except for ops with
    ``raw_args`` (comparisons, Where's condition), which get them in their own types.
    """

    expr: Expr
    dtypes: frozenset[str]
    arity: tuple[int, int] = (1, 1)
    result: str = "same"
    attrs: Callable[[Any], dict | None] | None = None
    raw_args: bool = False


def _f(name: str) -> Expr:
    return lambda a, at, t: f"{math_fn(name, t)}({a[0]})"


def _binary(op: str, dtypes: frozenset[str] = NUMERIC) -> OpRule:
    return OpRule(lambda a, at, t: f"({a[0]} {op} {a[1]})", dtypes, (2, 2))


def _compare(op: str, dtypes: frozenset[str] = NUMERIC) -> OpRule:
    return OpRule(lambda a, at, t: f"({a[0]} {op} {a[1]})", dtypes, (2, 2), result="bool", raw_args=True)


def _logic(op: str) -> OpRule:
    return OpRule(lambda a, at, t: f"({a[0]} {op} {a[1]})", BOOL, (2, 2), result="bool")


def _fold(helper: str) -> Expr:
    def expr(a: Sequence[str], at: dict, t: str) -> str:
        out = a[0]
        for b in a[1:]:
            out = f"{helper}({out}, {b})"
        return out
    return expr


def _c(value: float, t: str) -> str:
    return literal(value, t)


def _mod(a: Sequence[str], at: dict, t: str) -> str:
    if t in FLOATS:  # ONNX asks for fmod=1 with floats; fmod=0 gets numpy's sign-of-divisor result
        return f"{math_fn('fmod', t)}({a[0]}, {a[1]})" if at["fmod"] else f"onnxplug_fmod_floor({a[0]}, {a[1]})"
    if at["fmod"] or t in UNSIGNED:
        return f"({a[0]} % {a[1]})"
    return f"onnxplug_mod_floor({a[0]}, {a[1]})"


def _clip_attrs(node: Any) -> dict | None:
    if node.opset < 11:
        return {"min": float(node.attr("min", float("-inf"))), "max": float(node.attr("max", float("inf")))}
    return {}


def _clip(a: Sequence[str], at: dict, t: str) -> str:
    x = a[0]
    lo = a[1] if len(a) > 1 and a[1] != "" else None
    hi = a[2] if len(a) > 2 and a[2] != "" else None
    if "min" in at:
        lo, hi = _c(at["min"], t), _c(at["max"], t)
    if lo is not None:
        x = f"onnxplug_clip_low({x}, {lo})"
    if hi is not None:
        x = f"onnxplug_clip_high({x}, {hi})"
    return x


def _gelu(x: str, at: dict, t: str) -> str:
    if at["approximate"] == "tanh":
        inner = f"{_c(GELU_SQRT_2_OVER_PI, t)} * ({x} + {_c(GELU_CUBIC, t)} * {x} * {x} * {x})"
        return f"({_c(0.5, t)} * {x} * ({_c(1.0, t)} + {math_fn('tanh', t)}({inner})))"
    return f"({_c(0.5, t)} * {x} * ({_c(1.0, t)} + {math_fn('erf', t)}({x} * {_c(GELU_SQRT_HALF, t)})))"


def _softplus(x: str, t: str) -> str:
    # log(1 + e^x) without overflow: x + log1p(e^-x) for x > 0
    return (f"({x} > {_c(0, t)} ? {x} + {math_fn('log1p', t)}({math_fn('exp', t)}(-{x})) "
            f": {math_fn('log1p', t)}({math_fn('exp', t)}({x})))")


def _is_inf(a: Sequence[str], at: dict, t: str) -> str:
    checks = []
    if at["detect_positive"]:
        checks.append(f"{a[0]} == {_c(float('inf'), t)}")
    if at["detect_negative"]:
        checks.append(f"{a[0]} == {_c(float('-inf'), t)}")
    return "(" + " || ".join(checks) + ")" if checks else "false"


def _shift(a: Sequence[str], at: dict, t: str) -> str:
    # shifting by the type's width or more is undefined in C; ONNX (numpy) gives 0
    bits = 8 * {"uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}[t]
    op = "<<" if at["direction"] == "LEFT" else ">>"
    return f"(({a[1]}) >= {_c(bits, t)} ? {_c(0, t)} : ({C_TYPES[t]})({a[0]} {op} {a[1]}))"



RULES: dict[str, OpRule] = {
    # C integer division truncates toward zero, as ONNX's integer Div
    **{op: _binary(sym) for op, sym in ARITHMETIC.items()},
    "Pow": OpRule(lambda a, at, t: f"{math_fn('pow', t)}({a[0]}, {a[1]})", FLOATS, (2, 2)),
    "Mod": OpRule(_mod, NUMERIC, (2, 2), attrs=mod_attrs),
    "Max": OpRule(_fold("onnxplug_max"), NUMERIC, (1, 64)),
    "Min": OpRule(_fold("onnxplug_min"), NUMERIC, (1, 64)),
    "Sum": OpRule(lambda a, at, t: "(" + " + ".join(a) + ")", FLOATS, (1, 64)),
    "Mean": OpRule(lambda a, at, t: f"(({' + '.join(a)}) / {_c(len(a), t)})", FLOATS, (1, 64)),
    "Neg": OpRule(lambda a, at, t: f"(-{a[0]})", FLOATS | SIGNED),
    "Abs": OpRule(lambda a, at, t: a[0] if t in UNSIGNED else f"onnxplug_abs({a[0]})", NUMERIC),
    "Reciprocal": OpRule(lambda a, at, t: f"({_c(1.0, t)} / {a[0]})", FLOATS),
    "Sign": OpRule(lambda a, at, t: f"({a[0]} > {_c(0, t)})" if t in UNSIGNED else f"onnxplug_sign({a[0]})",
                   NUMERIC),
    "Identity": OpRule(lambda a, at, t: a[0], ALL),
    **{op: _compare(sym, ALL if op == "Equal" else NUMERIC) for op, sym in COMPARISONS.items()},
    **{op: _logic(sym["c"]) for op, sym in LOGIC.items()},
    "Not": OpRule(lambda a, at, t: f"({NOT['c']}{a[0]})", BOOL, result="bool"),
    **{op: _binary(sym, INTS) for op, sym in BITWISE.items()},
    "BitwiseNot": OpRule(lambda a, at, t: f"(({C_TYPES[t]})~{a[0]})", INTS),
    "BitShift": OpRule(_shift, UNSIGNED, (2, 2), attrs=shift_attrs),
    "IsNaN": OpRule(lambda a, at, t: f"({a[0]} != {a[0]})", FLOATS, result="bool", raw_args=True),
    "IsInf": OpRule(_is_inf, FLOATS, result="bool", raw_args=True,
                    attrs=attrs_of("IsInf")),
    "Where": OpRule(lambda a, at, t: f"({a[0]} ? {a[1]} : {a[2]})", BOOL, (3, 3), result="x1", raw_args=True),
    **{op: OpRule(_f(fn["c"]), FLOATS) for op, fn in FLOAT_FUNCTIONS.items()},
    "Relu": OpRule(lambda a, at, t: f"({a[0]} < {_c(0, t)} ? {_c(0, t)} : {a[0]})", FLOATS | SIGNED),
    "Sigmoid": OpRule(lambda a, at, t: f"({_c(1.0, t)} / ({_c(1.0, t)} + {math_fn('exp', t)}(-{a[0]})))", FLOATS),
    "Softplus": OpRule(lambda a, at, t: _softplus(a[0], t), FLOATS),
    "Softsign": OpRule(lambda a, at, t: f"({a[0]} / ({_c(1.0, t)} + {math_fn('fabs', t)}({a[0]})))", FLOATS),
    "Elu": OpRule(lambda a, at, t: f"({a[0]} < {_c(0, t)} ? {_c(at['alpha'], t)} * "
                                   f"{math_fn('expm1', t)}({a[0]}) : {a[0]})", FLOATS, attrs=attrs_of("Elu")),
    "Selu": OpRule(lambda a, at, t: f"({_c(at['gamma'], t)} * ({a[0]} <= {_c(0, t)} ? {_c(at['alpha'], t)} * "
                                    f"{math_fn('expm1', t)}({a[0]}) : {a[0]}))", FLOATS,
                   # the constants of Selu's definition, not ONNX's float32 attribute defaults
                   attrs=read_attrs(alpha=1.6732632423543772, gamma=1.0507009873554805)),
    "Celu": OpRule(lambda a, at, t: f"(onnxplug_max({a[0]}, {_c(0, t)}) + onnxplug_min({_c(0, t)}, "
                                    f"{_c(at['alpha'], t)} * {math_fn('expm1', t)}({a[0]} / {_c(at['alpha'], t)})))",
                   frozenset({"float32"}), attrs=attrs_of("Celu")),  # ONNX defines Celu for float only
    "LeakyRelu": OpRule(lambda a, at, t: f"({a[0]} < {_c(0, t)} ? {_c(at['alpha'], t)} * {a[0]} : {a[0]})",
                        FLOATS, attrs=attrs_of("LeakyRelu")),
    "ThresholdedRelu": OpRule(lambda a, at, t: f"({a[0]} > {_c(at['alpha'], t)} ? {a[0]} : {_c(0, t)})",
                              FLOATS, attrs=attrs_of("ThresholdedRelu")),
    "HardSigmoid": OpRule(lambda a, at, t: f"onnxplug_unit_clamp({_c(at['alpha'], t)} * {a[0]} + "
                                           f"{_c(at['beta'], t)})", FLOATS, attrs=attrs_of("HardSigmoid")),
    "HardSwish": OpRule(lambda a, at, t: f"({a[0]} * onnxplug_unit_clamp({a[0]} / {_c(6.0, t)} + {_c(0.5, t)}))",
                        FLOATS),
    "Mish": OpRule(lambda a, at, t: f"({a[0]} * {math_fn('tanh', t)}({_softplus(a[0], t)}))", FLOATS),
    "Swish": OpRule(lambda a, at, t: f"({a[0]} / ({_c(1.0, t)} + {math_fn('exp', t)}(-{_c(at['alpha'], t)} * "
                                     f"{a[0]})))", FLOATS, attrs=attrs_of("Swish")),
    "Gelu": OpRule(lambda a, at, t: _gelu(a[0], at, t), FLOATS, attrs=gelu_attrs),
    "BiasGelu": OpRule(lambda a, at, t: _gelu(f"({a[0]} + {a[1]})", at, t), FLOATS, (2, 2), attrs=gelu_attrs),
    "Shrink": OpRule(lambda a, at, t: f"({a[0]} < {_c(-at['lambd'], t)} ? {a[0]} + {_c(at['bias'], t)} : "
                                      f"({a[0]} > {_c(at['lambd'], t)} ? {a[0]} - {_c(at['bias'], t)} : {_c(0, t)}))",
                     FLOATS, attrs=attrs_of("Shrink")),
    "PRelu": OpRule(lambda a, at, t: f"({a[0]} < {_c(0, t)} ? {a[0]} * {a[1]} : {a[0]})", FLOATS, (2, 2)),
    "Clip": OpRule(_clip, FLOATS | SIGNED, (1, 3), attrs=_clip_attrs),
}

#: Ops of the project's domain computed by the same rules.
FUSED_RULES = {"Gelu": "Gelu", "BiasGelu": "BiasGelu"}

#: The first opset at which each op has its current (multidirectional broadcasting) semantics.
_MIN_OPSET = {"Add": 7, "Sub": 7, "Mul": 7, "Div": 7, "Pow": 7, "Equal": 7, "Less": 7, "Greater": 7,
              "And": 7, "Or": 7, "Xor": 7, "PRelu": 7, "Max": 8, "Min": 8, "Sum": 8, "Mean": 8,
              "Gelu": 20, "Swish": 24, "Clip": 6}


def rule_for(domain: str, op_type: str, opset: int) -> OpRule | None:
    """The rule computing an op of ``domain`` at ``opset``, if the generator knows it."""
    if domain in ("", "ai.onnx"):
        if opset < _MIN_OPSET.get(op_type, 1):
            return None
        return RULES.get(op_type) if op_type != "BiasGelu" else None
    if domain == FUSED_DOMAIN and op_type in FUSED_RULES:
        return RULES[FUSED_RULES[op_type]]
    return None


def step_for(node: Any, dtype_of: Callable[[str], Any]) -> Step | None:
    """The program step for an elementwise node, or None if it is not computed exactly here."""
    rule = rule_for(node.domain, node.op_type, node.opset)
    if rule is None or len(node.outputs) != 1 or not node.outputs[0] or node.subgraphs:
        return None
    n = len(node.inputs)
    if not rule.arity[0] <= n <= rule.arity[1] or not node.inputs or not node.inputs[0]:
        return None
    if node.op_type != "Clip" and "" in node.inputs:
        return None
    dtypes = [_name(dtype_of(i)) if i else None for i in node.inputs]
    if any(d is None for d, i in zip(dtypes, node.inputs) if i):
        return None
    first = dtypes[0]
    if first not in rule.dtypes:
        return None
    if rule.result == "x1":  # Where(cond, x, y)
        result = dtypes[1]
        if result not in ALL or dtypes[2] != result:
            return None
    elif rule.result == "bool":
        result = "bool"
        if any(d != first for d in dtypes if d is not None):
            return None
    else:
        result = first
        others = [d for d in dtypes[1:] if d is not None]
        if node.op_type == "Pow":  # the exponent may have another numeric type
            if any(d not in NUMERIC for d in others):
                return None
        elif any(d != first for d in others):
            return None
    out_dtype = _name(dtype_of(node.outputs[0]))
    if out_dtype is not None and out_dtype != result:
        return None
    attrs = rule.attrs(node) if rule.attrs is not None else {}
    if attrs is None:
        return None
    return Step(node.op_type if node.domain in ("", "ai.onnx") else FUSED_RULES[node.op_type],
                tuple(i or None for i in node.inputs), tuple(dtypes), node.outputs[0], result,
                tuple(sorted(attrs.items())))


def _name(dtype: Any) -> str | None:
    if dtype is None:
        return None
    try:
        import numpy as np

        return np.dtype(dtype).name
    except TypeError:
        return None


def expression(step: Step, args: Sequence[str | None]) -> str:
    """The C expression of ``step`` over C expressions of its arguments (``None`` if omitted);
    arguments are cast to the result type unless the rule takes them raw."""
    rule = RULES[step.op]
    result = step.dtype
    compute = step.arg_dtypes[0] if rule.result == "bool" else result
    cast: list[str] = []
    for i, (arg, dtype) in enumerate(zip(args, step.arg_dtypes)):
        if arg is None:
            cast.append("")
        elif rule.raw_args or dtype == result or (rule.result == "x1" and i == 0):
            cast.append(arg)
        else:
            cast.append(f"(({C_TYPES[result]}){arg})")
    return rule.expr(cast, dict(step.attrs), compute)


#: Device helpers every generated kernel source starts with (templates, so one set serves all types).
PREAMBLE = r"""
template <typename T> __device__ __forceinline__ T onnxplug_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> __device__ __forceinline__ T onnxplug_min(T a, T b) { return (a != a || a < b) ? a : b; }
template <typename T> __device__ __forceinline__ T onnxplug_clip_low(T x, T lo) { return x < lo ? lo : x; }
template <typename T> __device__ __forceinline__ T onnxplug_clip_high(T x, T hi) { return x > hi ? hi : x; }
template <typename T> __device__ __forceinline__ T onnxplug_abs(T x) { return x < (T)0 ? (T)(-x) : x; }
template <typename T> __device__ __forceinline__ T onnxplug_sign(T x) { return (T)((x > (T)0) - (x < (T)0)); }
template <typename T> __device__ __forceinline__ T onnxplug_unit_clamp(T x) {
    return x < (T)0 ? (T)0 : (x > (T)1 ? (T)1 : x);
}
template <typename T> __device__ __forceinline__ T onnxplug_mod_floor(T a, T b) {
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b) : r;
}
__device__ __forceinline__ float onnxplug_fmod_floor(float a, float b) {
    float r = fmodf(a, b);
    return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}
__device__ __forceinline__ double onnxplug_fmod_floor(double a, double b) {
    double r = fmod(a, b);
    return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r;
}
"""
