"""Small single-op programs computed by numpy's ufuncs instead of the compiled loop.

A planned call of the compiled loop pays numba's dispatch (typing each argument) and flattens
every operand; a ufunc call skips both. Control-flow bodies run many such tiny ops (a loop
condition, a counter increment), so for them the ufunc is used, but only for ops
where it is bit-identical to the generated scalar expression and raises no floating-point warning
the compiled loop would not: comparisons, logic, ``Abs``/``Neg``, ``Where``, ``IsNaN``, and
integer ``Add``/``Sub``/``Mul`` (both wrap modulo 2**bits).

A comparison or logical op on 0-d inputs (a loop condition, an If's predicate) goes further: it
compares the Python values (``item()``: exact for every integer and float dtype, NaN compares as
IEEE says) and wraps the bool in a new 0-d array, cheaper than a ufunc call with ``out=``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from onnxplug_sdk.elementwise import BOOL, FLOATS, INTS, NUMERIC, SIGNED

from onnxplug_numba.fusion import calls
from onnxplug_numba.fusion.calls import Call
from onnxplug_numba.fusion.codegen import Program

#: Up to this many output elements a single exact op runs through numpy: the ufunc's lead was
#: measured up to here; far above it the compiled loop may split the work across threads.
NUMPY_MAX_ELEMENTS = 4096

#: op -> (ufunc, dtypes of its inputs for which it matches the generated expression exactly).
_EXACT: dict[str, tuple[Callable[..., Any], frozenset[str]]] = {
    "Equal": (np.equal, NUMERIC | BOOL), "Less": (np.less, NUMERIC), "Greater": (np.greater, NUMERIC),
    "LessOrEqual": (np.less_equal, NUMERIC), "GreaterOrEqual": (np.greater_equal, NUMERIC),
    "And": (np.logical_and, BOOL), "Or": (np.logical_or, BOOL), "Xor": (np.not_equal, BOOL),
    "Not": (np.logical_not, BOOL), "IsNaN": (np.isnan, FLOATS),
    "Abs": (np.absolute, NUMERIC), "Neg": (np.negative, FLOATS | SIGNED),
    # integer arithmetic wraps the same way in both; float arithmetic stays on the loop, as numpy
    # would warn where it overflows to inf
    "Add": (np.add, INTS), "Sub": (np.subtract, INTS), "Mul": (np.multiply, INTS),
    "Where": (np.where, NUMERIC | BOOL),
}

#: op -> the same test on Python values a, b (bools, ints or floats of one dtype).
_SCALAR: dict[str, str] = {
    "Equal": "a == b", "Less": "a < b", "Greater": "a > b", "LessOrEqual": "a <= b", "GreaterOrEqual": "a >= b",
    "And": "a and b", "Or": "a or b", "Xor": "a != b", "Not": "not a", "IsNaN": "a != a",
}


def numpy_call(program: Program, out_shape: tuple[int, ...]) -> Call | None:
    """A ufunc call computing ``program`` exactly at ``out_shape``, or None if there is none."""
    if len(program.steps) != 1 or len(program.outputs) != 1 or math.prod(out_shape) > NUMPY_MAX_ELEMENTS:
        return None
    step = program.steps[0]
    found = _EXACT.get(step.op)
    # the step's value dtype (Where: its second input's) must be one the ufunc matches exactly
    if found is None or step.attrs or program.input_dtypes[-1] not in found[1]:
        return None
    ufunc = found[0]
    order = [program.inputs.index(a) for a in step.args if a is not None]  # a repeated input is passed once
    if out_shape == () and step.op in _SCALAR:  # every input is 0-d (broadcasting keeps the rank)
        return calls.scalar_test(_SCALAR[step.op], order, len(program.inputs))
    # out= (not for np.where, which returns an array anyway): a ufunc on 0-d arrays returns a numpy
    # scalar, kernels return arrays
    dtype = None if ufunc is np.where else np.dtype(step.dtype)
    return calls.ufunc(ufunc, order, len(program.inputs), out_shape, dtype)
