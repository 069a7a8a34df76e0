"""onnxplug_sdk.elementwise: every operator and math function of the shared table computes its ONNX
op as onnxruntime does (onnx.reference where onnxruntime has no double kernel; the C names through
the C math library, the Python ones through numpy),
and the attribute readers give ONNX's defaults and refuse what the generators cannot compute."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import operator

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as NotImplemented_

from onnxplug_sdk import elementwise as ew

_TYPES = {"float64": TensorProto.DOUBLE, "int32": TensorProto.INT32, "bool": TensorProto.BOOL}


def _ort(op: str, inputs: list[np.ndarray], **attrs) -> np.ndarray:
    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, _TYPES[a.dtype.name], a.shape)
                                            for n, a in zip(names, inputs)],
                              [helper.make_empty_tensor_value_info("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except NotImplemented_:  # onnxruntime has no double kernel of some math ops: the ONNX reference
        return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0]
    return session.run(None, dict(zip(names, inputs)))[0]


def _domain(op: str) -> np.ndarray:
    if op in ("Acosh",):
        return np.linspace(1.0, 6.0, 41)
    if op in ("Asin", "Acos", "Atanh"):
        return np.linspace(-0.95, 0.95, 41)
    if op in ("Log", "Sqrt"):
        return np.linspace(0.01, 9.0, 41)
    return np.concatenate([np.linspace(-4.0, 4.0, 41), [-2.5, -0.5, 0.5, 1.5, 2.5]])  # Round's ties


def _rtol(op: str) -> float:
    return 1e-7 if op == "Erf" else 1e-13  # the oracle's double Erf is good to ~3e-8 only


_LIBM = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")


@pytest.mark.parametrize("op", sorted(ew.FLOAT_FUNCTIONS))
def test_c_math_function_computes_the_op(op):
    x = _domain(op)
    fn = getattr(_LIBM, ew.c_function(ew.FLOAT_FUNCTIONS[op]["c"], "float64", suffixed=True))
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
    got = np.array([fn(float(v)) for v in x])
    np.testing.assert_allclose(got, _ort(op, [x]), rtol=_rtol(op), atol=1e-15)


_NUMPY_OR_MATH = sorted(op for op, fn in ew.FLOAT_FUNCTIONS.items() if fn["python"].startswith(("np.", "math.")))


@pytest.mark.parametrize("op", _NUMPY_OR_MATH)
def test_python_math_function_computes_the_op(op):
    x = _domain(op)
    module, name = ew.FLOAT_FUNCTIONS[op]["python"].split(".")
    fn = getattr({"np": np, "math": math}[module], name)
    got = np.array([fn(float(v)) for v in x])
    np.testing.assert_allclose(got, _ort(op, [x]), rtol=_rtol(op), atol=1e-15)


def test_c_function_suffix_only_for_cuda_float32():
    assert ew.c_function("exp", "float32", suffixed=True) == "expf"
    assert ew.c_function("exp", "float64", suffixed=True) == "exp"
    assert ew.c_function("exp", "float32", suffixed=False) == "exp"


def _infix(sym: str, target: str):
    """The Python function that ``sym`` is in ``target`` (C's && || ! read as Python's)."""
    python = {"&&": "and", "||": "or"}.get(sym, sym) if target == "c" else sym
    return lambda a, b: eval(f"a {python} b", {}, {"a": a, "b": b})  # noqa: S307 - table symbols only


@pytest.mark.parametrize("table,dtype", [(ew.ARITHMETIC, "float64"), (ew.COMPARISONS, "int32"),
                                         (ew.BITWISE, "int32")])
def test_infix_operators_compute_the_op(table, dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(-20, 20, 30).astype(dtype)
    b = rng.integers(1, 7, 30).astype(dtype)
    for op, sym in table.items():
        got = np.array([_infix(sym, "c")(x.item(), y.item()) for x, y in zip(a, b)])
        np.testing.assert_array_equal(got, _ort(op, [a, b]), err_msg=op)


@pytest.mark.parametrize("target", ["python", "c"])
def test_logic_operators_compute_the_op(target):
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    for op, syms in ew.LOGIC.items():
        got = np.array([bool(_infix(syms[target], target)(x.item(), y.item())) for x, y in zip(a, b)])
        np.testing.assert_array_equal(got, _ort(op, [a, b]), err_msg=f"{op} ({target})")
    python_not = "not " if target == "python" else {"!": "not "}[ew.NOT["c"]]
    assert ew.NOT[target] in ("not ", "!")
    got = np.array([eval(f"{python_not}v", {}, {"v": v.item()}) for v in a])  # noqa: S307
    np.testing.assert_array_equal(got, _ort("Not", [a]))


class _Node:
    def __init__(self, **attrs):
        self.attrs = attrs

    def attr(self, name, default=None):
        return self.attrs.get(name, default)


def _schema_default(op: str, name: str):
    value = onnx.defs.get_schema(op).attributes[name].default_value
    return helper.get_attribute_value(value)


def test_attribute_readers():
    assert ew.mod_attrs(_Node()) == {"fmod": _schema_default("Mod", "fmod")}
    assert ew.mod_attrs(_Node(fmod=1)) == {"fmod": 1}
    assert ew.gelu_attrs(_Node()) == {"approximate": _schema_default("Gelu", "approximate").decode()}
    assert ew.gelu_attrs(_Node(approximate=b"tanh")) == {"approximate": "tanh"}
    assert ew.gelu_attrs(_Node(approximate="erf")) is None
    assert ew.shift_attrs(_Node(direction=b"RIGHT")) == {"direction": "RIGHT"}
    assert ew.shift_attrs(_Node()) is None and ew.shift_attrs(_Node(direction="UP")) is None
    assert ew.read_attrs(alpha=0.01, beta=2.0)(_Node(alpha=0.2)) == {"alpha": 0.2, "beta": 2.0}


def test_gelu_constants():
    assert ew.GELU_SQRT_HALF == math.sqrt(0.5)
    assert ew.GELU_SQRT_2_OVER_PI == math.sqrt(2 / math.pi)


def test_dtype_classes_partition_the_numeric_types():
    assert ew.INTS == ew.SIGNED | ew.UNSIGNED and not ew.SIGNED & ew.UNSIGNED
    assert ew.NUMERIC == ew.FLOATS | ew.INTS and not ew.NUMERIC & ew.BOOL
    for name in ew.SIGNED | ew.UNSIGNED:
        assert np.dtype(name).kind == ("i" if name in ew.SIGNED else "u")
    assert all(np.dtype(name).kind == "f" for name in ew.FLOATS)
    assert operator.contains(ew.BOOL, "bool")


@pytest.mark.parametrize("op", sorted(ew.ATTRIBUTE_DEFAULTS))
def test_attribute_defaults_are_onnx_schema_defaults(op):
    try:
        schema = onnx.defs.get_schema(op)
    except onnx.defs.SchemaError:
        pytest.skip(f"this onnx has no schema of {op}")
    for name, value in ew.ATTRIBUTE_DEFAULTS[op].items():
        expected = helper.get_attribute_value(schema.attributes[name].default_value)
        # ONNX stores float attributes as float32
        assert np.float32(value) == np.float32(expected) if isinstance(expected, float) else value == expected, \
            f"{op}.{name}"
    node = _Node(**{name: 7 for name in ew.ATTRIBUTE_DEFAULTS[op]})
    assert ew.attrs_of(op)(node) == dict.fromkeys(ew.ATTRIBUTE_DEFAULTS[op], 7)
