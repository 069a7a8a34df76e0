"""float32 Sigmoid and Tanh in OpenCL C as onnxruntime's MLAS computes them.

MLAS evaluates both as a rational approximation p(v) / q(v) of the input clamped to a range, by
Horner's rule in v * v with one fused multiply-add a step; the logistic adds 0.5 and clamps below
at 0. ``1 / (1 + exp(-x))`` is an ulp away on about half of all inputs, enough to move a
DynamicQuantizeLinear step of a quantized model downstream. The helpers are scalar functions: a
generated source that calls them (``CALL_PREFIX``) gets :data:`HELPERS` and no vector variant.
The constants are MLAS's (as the numpy provider's twin module uses them), written as hexadecimal
float32 literals so the OpenCL compiler reads exactly those values.
"""

from __future__ import annotations

import numpy as np

CALL_PREFIX = "onnxplug_mlas_"

#: name: ((lower, upper), p's coefficients from the highest power, q's coefficients, logistic?)
_FUNCTIONS = {
    "logistic": ((-18.0, 18.0),
                 (4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05, 8.51377133304701e-03,
                  2.48287947061529e-01),
                 (6.10247389755681e-13, 5.76102136993427e-09, 6.29106785017040e-06, 1.70198817374094e-03,
                  1.16817656904453e-01, 9.93151921023180e-01), True),
    "tanh": ((-9.0, 9.0),
             (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
              1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03),
             (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03), False),
}


def _f32(value: float) -> str:
    return float(np.float32(value)).hex() + "f"


def _horner(name: str, coefficients: tuple[float, ...]) -> list[str]:
    lines = [f"    float {name} = fma(s, {_f32(coefficients[0])}, {_f32(coefficients[1])});"]
    lines += [f"    {name} = fma({name}, s, {_f32(c)});" for c in coefficients[2:]]
    return lines


def _function(name: str) -> str:
    (lower, upper), p, q, logistic = _FUNCTIONS[name]
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
