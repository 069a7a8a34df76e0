"""Generated kernels are shared by computation, not by the names of the tensors they touch.

Real models name tensors after their nodes (``/blk/Add_output_0``), so chains doing the same thing
would otherwise each get their own module file and their own numba compile.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from numba_test_helpers import run_numba
from onnxplug_numba.fusion import cache, codegen
from onnxplug_numba.fusion.codegen import Program
from onnxplug_numba.fusion.ops import Step

_ONNX_TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}


def _chain(names: dict[str, str], last_op: str = "Mul", dtype: type = np.float32) -> onnx.ModelProto:
    """y = last_op(Relu(x + b), x), every tensor, node and graph named from ``names``."""
    n = names
    nodes = [helper.make_node("Add", [n["x"], n["b"]], [n["s"]], name=n["add"]),
             helper.make_node("Relu", [n["s"]], [n["r"]], name=n["relu"]),
             helper.make_node(last_op, [n["r"], n["x"]], [n["y"]], name=n["last"])]
    t = _ONNX_TYPES[dtype]
    graph = helper.make_graph(nodes, n["graph"], [helper.make_tensor_value_info(n["x"], t, (3, 8)),
                                                  helper.make_tensor_value_info(n["b"], t, (3, 8))],
                              [helper.make_tensor_value_info(n["y"], t, (3, 8))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


_PLAIN = dict(x="x", b="b", s="s", r="r", y="y", add="add", relu="relu", last="last", graph="plain")
_EXPORTED = {"x": "/init/MatMul_output_0", "b": "encoder.layer.0.bias", "s": "/blk/Add_output_0",
             "r": "/blk/Relu_output_0", "y": "logits", "add": "/blk/Add", "relu": "/blk/Relu",
             "last": "/blk/Mul", "graph": "torch_jit"}


def _session_modules(names: dict[str, str], rng: np.random.Generator, last_op: str = "Mul",
                     dtype: type = np.float32) -> list:
    """Runs the chain, checks it against numpy and returns the generated modules its kernel uses."""
    model = _chain(names, last_op, dtype)
    x, b = (rng.standard_normal((3, 8)).astype(dtype) for _ in range(2))
    got, session = run_numba(model, {names["x"]: x, names["b"]: b})
    relu = np.maximum(x + b, 0)
    expected = relu * x if last_op == "Mul" else relu + x
    np.testing.assert_allclose(got[0], expected, rtol=1e-6)
    steps = session.engine.plan.steps
    assert [s.kind for s in steps] == ["fused"], [s.kind for s in steps]
    modules = list(steps[0].kernel.runner._kernels.values())
    assert modules, "the chain's loop was not compiled when the session was created"
    return modules


def _files(folder) -> set[str]:
    return {p.name for p in folder.rglob("k_*.py")}


@pytest.fixture
def empty_kernel_cache(tmp_path, monkeypatch):
    """A fresh cache folder and an empty in-process registry, so every module counted here is new."""
    monkeypatch.setenv(cache.CACHE_ENV_VAR, str(tmp_path))
    monkeypatch.setattr(cache, "_loaded", {})
    return tmp_path


def test_same_chain_with_other_names_reuses_one_compiled_module(empty_kernel_cache, rng):
    first = _session_modules(_PLAIN, rng)
    files = _files(empty_kernel_cache)
    compiled = [len(m.kernel.overloads) for m in first]
    assert len(files) == len(first) >= 1

    second = _session_modules(_EXPORTED, rng)
    assert [id(m) for m in second] == [id(m) for m in first]  # the very same module objects
    assert _files(empty_kernel_cache) == files  # no new module file on disk
    assert [len(m.kernel.overloads) for m in first] == compiled  # and no new numba compile


def test_different_chains_or_dtypes_get_their_own_modules(empty_kernel_cache, rng):
    mul = _session_modules(_PLAIN, rng, "Mul")
    add = _session_modules(_PLAIN, rng, "Add")
    mul64 = _session_modules(_EXPORTED, rng, "Mul", np.float64)
    ids = [{id(m) for m in mods} for mods in (mul, add, mul64)]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    assert len(_files(empty_kernel_cache)) == len(mul) + len(add) + len(mul64)


def test_generated_source_has_no_tensor_names_but_keeps_dtypes_and_flags():
    def program(names: tuple[str, ...], dtype: str) -> Program:
        steps = (Step("Add", (names[0], names[1]), names[2], dtype), Step("Relu", (names[2],), names[3], dtype))
        return Program(names[:2], (dtype, dtype), steps, (names[3],))

    plain = codegen.generate(program(("x", "b", "s", "y"), "float32"), "flat", ("c", "c"))
    exported = codegen.generate(program(("/init/MatMul_output_0", "bias", "/Add_output_0", "out"), "float32"),
                                "flat", ("c", "c"))
    assert plain == exported
    assert "MatMul" not in exported and "bias" not in exported
    assert codegen.generate(program(("x", "b", "s", "y"), "float64"), "flat", ("c", "c")) != plain
    assert codegen.generate(program(("x", "b", "s", "y"), "float32"), "flat", ("c", "z")) != plain
    # flags are part of the hashed source; no fastmath, so each op rounds as onnxruntime's kernels do
    assert "error_model='numpy'" in plain and "fastmath=" not in plain
