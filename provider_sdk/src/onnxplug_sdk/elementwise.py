"""Elementwise ONNX ops for the code-generating providers: the one table of their operators, math
functions, dtype classes and attribute readers, per target language.

Targets: ``"python"`` (the scalar Python numba compiles; ``"python32"`` where float32 has a
vectorisable replacement of its own) and ``"c"`` (CUDA C and OpenCL C; CUDA's float32 math adds
the ``f`` suffix, see :func:`c_function`). Each generator keeps what is its own: literals and
casts, the helper functions behind activations (NaN and overflow handling, MLAS's Sigmoid/Tanh),
and which dtypes it claims.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["ARITHMETIC", "ATTRIBUTE_DEFAULTS", "BITWISE", "BOOL", "COMPARISONS", "FLOATS", "FLOAT_FUNCTIONS", "FUSED_DOMAIN",
           "GELU_CUBIC", "GELU_SQRT_2_OVER_PI", "GELU_SQRT_HALF", "INTS", "LOGIC", "NOT", "NUMERIC", "SIGNED",
           "UNSIGNED", "attrs_of", "c_function", "gelu_attrs", "mod_attrs", "read_attrs", "shift_attrs"]

#: numpy dtype names by class.
FLOATS = frozenset({"float32", "float64"})
SIGNED = frozenset({"int8", "int16", "int32", "int64"})
UNSIGNED = frozenset({"uint8", "uint16", "uint32", "uint64"})
INTS = SIGNED | UNSIGNED
NUMERIC = FLOATS | INTS
BOOL = frozenset({"bool"})

#: The project's domain of fused ops (Gelu, BiasGelu) besides ai.onnx.
FUSED_DOMAIN = "com.onnxplug"

#: Infix operators, the same text in every target.
ARITHMETIC = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}
COMPARISONS = {"Equal": "==", "Less": "<", "Greater": ">", "LessOrEqual": "<=", "GreaterOrEqual": ">="}
BITWISE = {"BitwiseAnd": "&", "BitwiseOr": "|", "BitwiseXor": "^"}
#: Boolean operators per target.
LOGIC = {"And": {"python": "and", "c": "&&"}, "Or": {"python": "or", "c": "||"},
         "Xor": {"python": "!=", "c": "!="}}
NOT = {"python": "not ", "c": "!"}

#: Float unary ops that are one math function call, per target. C's Round is ``rint``: ties to
#: even under the default rounding mode, as ONNX asks.
FLOAT_FUNCTIONS: dict[str, dict[str, str]] = {
    "Exp": {"python": "np.exp", "python32": "exp32", "c": "exp"},
    "Log": {"python": "np.log", "c": "log"},
    "Sqrt": {"python": "np.sqrt", "c": "sqrt"},
    "Sin": {"python": "np.sin", "c": "sin"},
    "Cos": {"python": "np.cos", "c": "cos"},
    "Tan": {"python": "np.tan", "c": "tan"},
    "Asin": {"python": "np.arcsin", "c": "asin"},
    "Acos": {"python": "np.arccos", "c": "acos"},
    "Atan": {"python": "np.arctan", "c": "atan"},
    "Sinh": {"python": "np.sinh", "c": "sinh"},
    "Cosh": {"python": "np.cosh", "c": "cosh"},
    "Tanh": {"python": "np.tanh", "python32": "tanh32", "c": "tanh"},
    "Asinh": {"python": "np.arcsinh", "c": "asinh"},
    "Acosh": {"python": "np.arccosh", "c": "acosh"},
    "Atanh": {"python": "np.arctanh", "c": "atanh"},
    "Floor": {"python": "np.floor", "c": "floor"},
    "Ceil": {"python": "np.ceil", "c": "ceil"},
    "Erf": {"python": "math.erf", "python32": "erf32", "c": "erf"},
    "Round": {"python": "op_round_even", "c": "rint"},
}

#: Gelu's constants: sqrt(1/2) (exact form) and sqrt(2/pi) with the cubic term's factor (tanh form).
GELU_SQRT_HALF = 0.7071067811865476
GELU_SQRT_2_OVER_PI = 0.7978845608028654
GELU_CUBIC = 0.044715


#: ONNX's defaults of the activations' attributes; each float rounds to the float32 value ONNX
#: stores (Selu's are those float32 values, not the 17-digit constants of its definition).
ATTRIBUTE_DEFAULTS: dict[str, dict[str, Any]] = {
    "Elu": {"alpha": 1.0},
    "Celu": {"alpha": 1.0},
    "Selu": {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875},
    "LeakyRelu": {"alpha": 0.01},
    "ThresholdedRelu": {"alpha": 1.0},
    "HardSigmoid": {"alpha": 0.2, "beta": 0.5},
    "Swish": {"alpha": 1.0},
    "Shrink": {"bias": 0.0, "lambd": 0.5},
    "IsInf": {"detect_negative": 1, "detect_positive": 1},
}


def attrs_of(op: str) -> Callable[[Any], dict]:
    """A reader of ``op``'s attributes of :data:`ATTRIBUTE_DEFAULTS`, each with its default."""
    return read_attrs(**ATTRIBUTE_DEFAULTS[op])


def c_function(name: str, dtype: str, suffixed: bool) -> str:
    """The C math function ``name`` for ``dtype``; with ``suffixed`` (CUDA), float32 gets ``expf``
    for ``exp``; OpenCL's builtins are overloaded and take the plain name."""
    return f"{name}f" if suffixed and dtype == "float32" else name


def read_attrs(**defaults: Any) -> Callable[[Any], dict]:
    """A reader of these attributes from a node, each with its default."""
    def read(node: Any) -> dict:
        return {k: node.attr(k, v) for k, v in defaults.items()}
    return read


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def gelu_attrs(node: Any) -> dict | None:
    """Gelu's ``approximate`` (``none`` or ``tanh``); None for any other value (not generated)."""
    approx = _text(node.attr("approximate", "none"))
    return {"approximate": approx} if approx in ("none", "tanh") else None


def mod_attrs(node: Any) -> dict:
    """Mod's ``fmod`` as an int."""
    return {"fmod": int(node.attr("fmod", 0))}


def shift_attrs(node: Any) -> dict | None:
    """BitShift's ``direction``; None unless LEFT or RIGHT."""
    direction = _text(node.attr("direction", ""))
    return {"direction": direction} if direction in ("LEFT", "RIGHT") else None
