"""The elementwise ops the code generator knows: how each becomes one scalar expression.

A node is turned into a :class:`Step` (op, attributes, dtypes) by :func:`step_for`, which returns
None for anything it cannot compute exactly (dtype, attribute, opset); such nodes are not claimed.
Operators, math functions, dtype classes and attribute readers come from the SDK's table shared
with the other generators (``onnxplug_sdk.elementwise``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from onnxplug_sdk.elementwise import (
    ARITHMETIC,
    BOOL,
    COMPARISONS,
    FLOAT_FUNCTIONS,
    FLOATS,
    FUSED_DOMAIN,
    LOGIC,
    NOT,
    NUMERIC,
    SIGNED,
    attrs_of,
    gelu_attrs,
    mod_attrs,
)


@dataclass(frozen=True)
class Step:
    """One elementwise op of a program: ``out = op(args)``; ``None`` args are omitted inputs."""

    op: str
    args: tuple[str | None, ...]
    out: str
    dtype: str  # the result's numpy dtype name
    attrs: tuple[tuple[str, Any], ...] = ()

    def attr(self, name: str) -> Any:
        return dict(self.attrs)[name]


Expr = Callable[[Sequence[str], dict, str], str]


@dataclass(frozen=True)
class OpRule:
    """How to compute one op type: the expression, accepted input dtypes and the result dtype."""

    expr: Expr
    dtypes: frozenset[str]
    arity: tuple[int, int] = (1, 1)
    bool_result: bool = False
    attrs: Callable[[Any], dict | None] | None = None  # node -> attribute dict, None = unsupported


def _c(t: str, value: float) -> str:
    return f"np.{t}({value!r})"


def _unary(fn: str, fast32: str = "") -> OpRule:
    """``fn(x)``; float32 uses ``fast32`` (a vectorisable version from kernels.fastmath) when given."""
    return OpRule(lambda a, at, t: f"np.{t}({fast32 if fast32 and t == 'float32' else fn}({a[0]}))", FLOATS)


def _binary(op: str, dtypes: frozenset[str] = NUMERIC) -> OpRule:
    return OpRule(lambda a, at, t: f"np.{t}({a[0]} {op} {a[1]})", dtypes, (2, 2))


def _compare(op: str, dtypes: frozenset[str] = NUMERIC) -> OpRule:
    return OpRule(lambda a, at, t: f"({a[0]} {op} {a[1]})", dtypes, (2, 2), bool_result=True)


def _logic(op: str) -> OpRule:
    return OpRule(lambda a, at, t: f"({a[0]} {op} {a[1]})", BOOL, (2, 2), bool_result=True)


def _fold(fn: str) -> Expr:
    def expr(a: Sequence[str], at: dict, t: str) -> str:
        out = a[0]
        for b in a[1:]:
            out = f"{fn}({out}, {b})"
        return f"np.{t}({out})"
    return expr


def _clip_attrs(node: Any) -> dict | None:
    if node.opset < 11:
        return {"min": float(node.attr("min", -3.4028234663852886e38)),
                "max": float(node.attr("max", 3.4028234663852886e38))}
    return {}


def _clip(a: Sequence[str], at: dict, t: str) -> str:
    x = a[0]
    lo = a[1] if len(a) > 1 else None
    hi = a[2] if len(a) > 2 else None
    if "min" in at:
        lo, hi = _c(t, at["min"]), _c(t, at["max"])
    if lo is not None:
        x = f"op_max({x}, {lo})"
    if hi is not None:
        x = f"op_min({x}, {hi})"
    return f"np.{t}({x})"


def _is_inf(a: Sequence[str], at: dict, t: str) -> str:
    checks = []
    if at["detect_positive"]:
        checks.append(f"{a[0]} == np.inf")
    if at["detect_negative"]:
        checks.append(f"{a[0]} == -np.inf")
    return "(" + " or ".join(checks) + ")" if checks else "False"


def _mod(a: Sequence[str], at: dict, t: str) -> str:
    if t in FLOATS:
        fn = "np.fmod" if at["fmod"] else "op_mod_float"
        return f"np.{t}({fn}({a[0]}, {a[1]}))"
    fn = "op_mod_c" if at["fmod"] else "op_mod_python"
    return f"np.{t}({fn}({a[0]}, {a[1]}))"


RULES: dict[str, OpRule] = {
    # arithmetic
    **{op: _binary(ARITHMETIC[op]) for op in ("Add", "Sub", "Mul")},
    "Div": OpRule(lambda a, at, t: f"np.{t}({a[0]} / {a[1]})" if t in FLOATS else
                  f"np.{t}(op_div_trunc({a[0]}, {a[1]}))", NUMERIC, (2, 2)),
    "Pow": OpRule(lambda a, at, t: f"np.{t}({a[0]} ** {a[1]})", FLOATS, (2, 2)),
    "Max": OpRule(_fold("op_max"), NUMERIC, (1, 64)), "Min": OpRule(_fold("op_min"), NUMERIC, (1, 64)),
    "Sum": OpRule(lambda a, at, t: f"np.{t}({' + '.join(a)})", FLOATS, (1, 64)),
    "Mean": OpRule(lambda a, at, t: f"np.{t}(({' + '.join(a)}) / {len(a)})", FLOATS, (1, 64)),
    "Mod": OpRule(_mod, NUMERIC, (2, 2), attrs=mod_attrs),
    "Neg": OpRule(lambda a, at, t: f"np.{t}(-{a[0]})", FLOATS | SIGNED),
    "Abs": OpRule(lambda a, at, t: f"np.{t}(abs({a[0]}))", NUMERIC),
    "Reciprocal": OpRule(lambda a, at, t: f"np.{t}({_c(t, 1.0)} / {a[0]})", FLOATS),
    "Identity": OpRule(lambda a, at, t: a[0], NUMERIC | BOOL),
    # comparisons and logic
    **{op: _compare(sym, NUMERIC | BOOL if op == "Equal" else NUMERIC) for op, sym in COMPARISONS.items()},
    **{op: _logic(sym["python"]) for op, sym in LOGIC.items()},
    "Not": OpRule(lambda a, at, t: f"({NOT['python']}{a[0]})", BOOL, bool_result=True),
    "IsNaN": OpRule(lambda a, at, t: f"({a[0]} != {a[0]})", FLOATS, bool_result=True),
    "IsInf": OpRule(_is_inf, FLOATS, bool_result=True, attrs=attrs_of("IsInf")),
    "Where": OpRule(lambda a, at, t: f"({a[1]} if {a[0]} else {a[2]})", NUMERIC | BOOL, (3, 3)),
    # math
    **{op: _unary(fn["python"], fn.get("python32", "")) for op, fn in FLOAT_FUNCTIONS.items()},
    "Sign": OpRule(lambda a, at, t: f"np.{t}(op_sign({a[0]}, {_c(t, 0.0)}, {_c(t, 1.0)}))", FLOATS),
    # activations
    "Relu": OpRule(lambda a, at, t: f"op_relu({a[0]}, np.{t}(0))", FLOATS | SIGNED),
    "Sigmoid": OpRule(lambda a, at, t: f"sigmoid32({a[0]})" if t == "float32" else
                      f"np.{t}(op_sigmoid({a[0]}, {_c(t, 1.0)}))", FLOATS),
    "Softplus": OpRule(lambda a, at, t: f"np.{t}(op_softplus({a[0]}, {_c(t, 1.0)}))", FLOATS),
    "Softsign": OpRule(lambda a, at, t: f"np.{t}({a[0]} / ({_c(t, 1.0)} + abs({a[0]})))", FLOATS),
    "Elu": OpRule(lambda a, at, t: f"np.{t}({a[0]} if {a[0]} >= 0 else {_c(t, at['alpha'])} * "
                                   f"(np.exp({a[0]}) - {_c(t, 1.0)}))", FLOATS, attrs=attrs_of("Elu")),
    "Selu": OpRule(lambda a, at, t: f"np.{t}({_c(t, at['gamma'])} * ({a[0]} if {a[0]} > 0 else "
                                    f"{_c(t, at['alpha'])} * (np.exp({a[0]}) - {_c(t, 1.0)})))", FLOATS,
                   attrs=attrs_of("Selu")),
    "LeakyRelu": OpRule(lambda a, at, t: f"np.{t}({a[0]} if {a[0]} >= 0 else {_c(t, at['alpha'])} * {a[0]})",
                        FLOATS, attrs=attrs_of("LeakyRelu")),
    "ThresholdedRelu": OpRule(lambda a, at, t: f"np.{t}({a[0]} if {a[0]} > {_c(t, at['alpha'])} else 0)",
                              FLOATS, attrs=attrs_of("ThresholdedRelu")),
    "HardSigmoid": OpRule(lambda a, at, t: f"np.{t}(op_hard_sigmoid({a[0]}, {_c(t, at['alpha'])}, "
                                           f"{_c(t, at['beta'])}, {_c(t, 0.0)}, {_c(t, 1.0)}))",
                          FLOATS, attrs=attrs_of("HardSigmoid")),
    "HardSwish": OpRule(lambda a, at, t: f"np.{t}({a[0]} * op_hard_sigmoid({a[0]}, {_c(t, 1 / 6)}, "
                                         f"{_c(t, 0.5)}, {_c(t, 0.0)}, {_c(t, 1.0)}))", FLOATS),
    "Celu": OpRule(lambda a, at, t: f"np.{t}(op_max({a[0]}, {_c(t, 0.0)}) + op_min({_c(t, 0.0)}, "
                                    f"{_c(t, at['alpha'])} * (np.exp({a[0]} / {_c(t, at['alpha'])}) - 1)))",
                   FLOATS, attrs=attrs_of("Celu")),
    "Mish": OpRule(lambda a, at, t: f"np.{t}({a[0]} * np.tanh(op_softplus({a[0]}, {_c(t, 1.0)})))", FLOATS),
    "Swish": OpRule(lambda a, at, t: f"np.{t}({a[0]} * op_sigmoid({_c(t, at['alpha'])} * {a[0]}, "
                                     f"{_c(t, 1.0)}))", FLOATS, attrs=attrs_of("Swish")),
    "Gelu": OpRule(lambda a, at, t: f"np.{t}(op_gelu{'_tanh' if at['approximate'] == 'tanh' else ''}"
                                    f"{'32' if t == 'float32' else ''}({a[0]}))", FLOATS, attrs=gelu_attrs),
    "Shrink": OpRule(lambda a, at, t: f"np.{t}({a[0]} + {_c(t, at['bias'])} if {a[0]} < {_c(t, -at['lambd'])} "
                                      f"else ({a[0]} - {_c(t, at['bias'])} if {a[0]} > {_c(t, at['lambd'])} "
                                      f"else 0))", FLOATS, attrs=attrs_of("Shrink")),
    "PRelu": OpRule(lambda a, at, t: f"np.{t}({a[0]} if {a[0]} >= 0 else {a[0]} * {a[1]})", FLOATS, (2, 2)),
    "Clip": OpRule(_clip, FLOATS | SIGNED, (1, 3), attrs=_clip_attrs),
    # per-tensor linear quantization (step_for checks the mixed dtypes; the provider the scalars)
    "QuantizeLinear": OpRule(lambda a, at, t: f"np.{t}(op_quantize({a[0]}, {a[1]}, {a[2]}, "
                                              f"np.float32({_EIGHT_BIT[t][0]}), np.float32({_EIGHT_BIT[t][1]})))",
                             frozenset({"float32"}), (3, 3), attrs=lambda n: _qdq_attrs(n)),
    "DequantizeLinear": OpRule(lambda a, at, t: f"np.float32((np.float32({a[0]}) - np.float32({a[2]})) * {a[1]})",
                               frozenset({"uint8", "int8"}), (3, 3), attrs=lambda n: _qdq_attrs(n)),
}

#: Ops that only join chains: their single nodes have kernels of their own (ops/op_quantize.py).
CHAIN_ONLY = frozenset({"QuantizeLinear", "DequantizeLinear"})
_EIGHT_BIT = {"uint8": (0, 255), "int8": (-128, 127)}


def _qdq_attrs(node: Any) -> dict | None:
    """No attributes in the step (per-tensor only); None for blocks, a precision or an output type."""
    if node.attr("block_size", 0) or node.attr("precision", 0) or node.attr("output_dtype", 0):
        return None
    return {}


def _qdq_dtype(op: str, names: Sequence[str]) -> str | None:
    """The result dtype of a QuantizeLinear/DequantizeLinear step over input dtypes ``names``
    (x, scale, zero point), or None where the chain does not compute it."""
    x, scale, zero_point = names
    if scale != "float32" or zero_point not in _EIGHT_BIT:
        return None
    if op == "QuantizeLinear":
        return zero_point if x == "float32" else None
    return "float32" if x == zero_point else None

#: Gelu in the fused-op domain of the graph optimizer has the same meaning as ai.onnx Gelu.
_DOMAIN_ALIASES = {("com.microsoft", "Gelu"): "Gelu", (FUSED_DOMAIN, "Gelu"): "Gelu"}


def rule_for(node: Any) -> OpRule | None:
    """The rule computing ``node`` (standard domain, or a fused-op alias), if any."""
    if node.domain in ("", "ai.onnx"):
        return RULES.get(node.op_type)
    alias = _DOMAIN_ALIASES.get((node.domain, node.op_type))
    return RULES.get(alias) if alias else None


#: dtype -> its name: ``np.dtype.name`` is computed in Python on each access, and a kernel's first call
#: (planning for the dtypes it meets) asks for several.
_NAMES: dict[Any, str] = {}


def dtype_name(dtype: Any) -> str:
    """``np.dtype(dtype).name``, memoised."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = np.dtype(dtype).name
    return name


def _name(dtype: np.dtype | None) -> str | None:
    return None if dtype is None else dtype_name(dtype)


def step_for(node: Any, dtype_of: Callable[[str], np.dtype | None]) -> Step | None:
    """The program step for an elementwise node, or None if it is not computed exactly here."""
    rule = rule_for(node)
    if rule is None or len([o for o in node.outputs if o]) != 1 or len(node.outputs) != 1:
        return None
    present = [i for i in node.inputs if i]
    lo, hi = rule.arity
    if not lo <= len(node.inputs) <= hi or not present:
        return None
    attrs = rule.attrs(node) if rule.attrs else {}
    if attrs is None:
        return None
    names = [_name(dtype_of(i)) for i in present]
    if any(n is None for n in names):
        return None
    op = RULES_NAME[id(rule)]
    if op in CHAIN_ONLY:
        if len(present) != 3:
            return None
        value = _qdq_dtype(op, names)  # type: ignore[arg-type]
        if value is None:
            return None
    elif op == "Where":
        if names[0] != "bool" or names[1] != names[2] or names[1] not in rule.dtypes:
            return None
        value = names[1]
    else:
        if len(set(names)) != 1 or names[0] not in rule.dtypes:
            return None
        value = names[0]
    out_dtype = "bool" if rule.bool_result else value
    if _name(dtype_of(node.outputs[0])) not in (None, out_dtype):
        return None
    args = tuple(i if i else None for i in node.inputs)
    return Step(op, args, node.outputs[0], out_dtype, tuple(sorted(attrs.items())))


RULES_NAME = {id(rule): name for name, rule in RULES.items()}


def expression(step: Step, args: Sequence[str | None]) -> str:
    """The scalar expression of ``step`` over local names, one per input position (None if omitted)."""
    rule = RULES[step.op]
    return rule.expr(list(args), dict(step.attrs), step.dtype)


#: Rough time per element of an op, in multiples of an Add's, single-threaded on float32 (the
#: per-op times are in docs/benchmarks.md, "Measurements behind design choices"). Ops not
#: listed cost about one Add. A chain's total sets how few elements are worth sharing across threads.
_RELATIVE_COST = {
    **dict.fromkeys(("Exp", "Sigmoid", "Elu", "Selu", "Celu", "Swish"), 4),
    "Tanh": 6, "Erf": 11, "Gelu": 12,
    # scalar libm calls, not vectorised
    **dict.fromkeys(("Log", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
                     "Atanh", "Pow", "Softplus", "Mish"), 40),
}


def relative_cost(steps: Sequence[Step]) -> int:
    """The time per element of ``steps``, in multiples of one Add's (at least 1)."""
    return max(1, sum(_RELATIVE_COST.get(s.op, 1) for s in steps))
