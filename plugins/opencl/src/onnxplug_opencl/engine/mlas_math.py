"""float32 Sigmoid and Tanh in OpenCL C as onnxruntime's MLAS computes them.

MLAS evaluates both as a rational approximation p(v) / q(v) of the input clamped to a range, by
Horner's rule in v * v with one fused multiply-add a step; the logistic adds 0.5 and clamps below
at 0. ``1 / (1 + exp(-x))`` is an ulp away on about half of all inputs, enough to move a
DynamicQuantizeLinear step of a quantized model downstream. The helpers are scalar functions: a
generated source that calls them (``CALL_PREFIX``) gets :data:`HELPERS` and no vector variant.
The constants are MLAS's (``onnxplug_sdk.mlas``, shared with the other providers), written as
hexadecimal float32 literals so the OpenCL compiler reads exactly those values.
"""

from __future__ import annotations

import numpy as np

from onnxplug_sdk import mlas

CALL_PREFIX = "onnxplug_mlas_"

#: name: (the core's MLAS rational approximation, logistic?)
_FUNCTIONS = {"logistic": (mlas.LOGISTIC, True), "tanh": (mlas.TANH, False)}


def _f32(value: float) -> str:
    return float(np.float32(value)).hex() + "f"


def _horner(name: str, coefficients: tuple[float, ...]) -> list[str]:
    lines = [f"    float {name} = fma(s, {_f32(coefficients[0])}, {_f32(coefficients[1])});"]
    lines += [f"    {name} = fma({name}, s, {_f32(c)});" for c in coefficients[2:]]
    return lines


def _function(name: str) -> str:
    (lower, upper, p, q), logistic = _FUNCTIONS[name]
    lo, hi = _f32(lower), _f32(upper)
    body = [f"    const float v = x < {lo} ? {lo} : (x > {hi} ? {hi} : x);  /* keeps NaN */",
            "    const float s = v * v;", *_horner("p", p), "    p = p * v;", *_horner("q", q)]
    if logistic:
        body += ["    const float y = p / q + 0.5f;", "    return y < 0.0f ? 0.0f : y;"]
    else:
        body += ["    return p / q;"]
    return "\n".join([f"inline float {CALL_PREFIX}{name}(float x)", "{", *body, "}"])


#: The definitions a source calling the helpers needs.
HELPERS = "\n".join(_function(name) for name in _FUNCTIONS)

#: The float32 ops computed by a helper, as expression templates.
FLOAT32_EXPRESSIONS = {"Sigmoid": f"{CALL_PREFIX}logistic({{x}})", "Tanh": f"{CALL_PREFIX}tanh({{x}})"}


def helpers_for(lines: tuple[str, ...] | list[str]) -> str:
    """:data:`HELPERS` when a statement of ``lines`` calls one, else nothing."""
    return HELPERS if any(CALL_PREFIX in line for line in lines) else ""
