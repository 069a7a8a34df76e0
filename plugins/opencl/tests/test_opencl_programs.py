"""Kernel sources, the program cache, and build failures carrying the OpenCL build log."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_helpers import assert_close, helper, make_model, run_both

from onnxplug_sdk import errors

from onnxplug_opencl.errors import OpenCLBuildError
from onnxplug_opencl.runtime.programs import ProgramCache, kernel_source, render


def test_kernels_ship_as_cl_files():
    assert "void gemm(" in kernel_source("gemm.cl") and "__kernel" in kernel_source("gemm.cl")
    assert "${body}" in kernel_source("elementwise.cl")


def test_render_fills_template_fields():
    text = render("elementwise.cl", pragmas="", name="k_test", params="", index="", loads="",
                  body="    const float y0 = 1.0f;", stores="")
    assert "__kernel void k_test" in text and "${" not in text


def test_build_failure_raises_typed_error_with_log(rt):
    source = "__kernel void broken(__global float* a) { a[0] = no_such_identifier; }"
    with pytest.raises(OpenCLBuildError) as caught:
        rt.programs.program("broken.cl", source)
    err = caught.value
    assert "no_such_identifier" in err.build_log
    assert "broken.cl" in str(err) and "no_such_identifier" in str(err)
    assert isinstance(err, errors.OnnxplugError)


def test_programs_are_cached_per_source_and_options(rt):
    source = "__kernel void cached(__global float* a) { a[get_global_id(0)] = VALUE; }"
    first = rt.programs.program("cached.cl", source, ["-DVALUE=1.0f"])
    builds = rt.programs.builds
    assert rt.programs.program("cached.cl", source, ["-DVALUE=1.0f"]) is first
    assert rt.programs.builds == builds
    other = rt.programs.program("cached.cl", source, ["-DVALUE=2.0f"])
    assert other is not first and rt.programs.builds == builds + 1


def _chain_session(names: dict[str, str], ops: list[str], x: np.ndarray, b: np.ndarray):
    """A fused chain ``ops[0](x, b) -> ops[1] -> ...`` whose node and tensor names come from ``names``."""
    n = names
    nodes = [helper.make_node(ops[0], [n["x"], n["b"]], [f"{n['t']}0"], name=f"{n['node']}0")]
    for k, op in enumerate(ops[1:], 1):
        nodes.append(helper.make_node(op, [f"{n['t']}{k - 1}"], [f"{n['t']}{k}"], name=f"{n['node']}{k}"))
    last = f"{n['t']}{len(ops) - 1}"
    feeds = {n["x"]: x, n["b"]: b}
    got, want, session = run_both(make_model(nodes, feeds, [last]), feeds)
    assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert len(session.engine.groups) == 1 and session.engine.groups[0].fused
    return session


def test_same_chain_under_other_names_builds_no_new_program(rt, rng, monkeypatch):
    """Kernel sources carry no node or tensor names: a renamed but identical chain reuses the
    program, while a chain computing something else gets its own."""
    monkeypatch.setattr(rt, "programs", ProgramCache(rt.context, rt.cl_device))  # counts from zero
    x = rng.standard_normal((3, 16)).astype(np.float32)
    b = rng.standard_normal((16,)).astype(np.float32)
    ops = ["Mul", "Sin", "Tanh", "Neg"]
    _chain_session({"x": "x", "b": "b", "t": "t", "node": "Sqrt_18_"}, ops, x, b)
    first = rt.programs.builds
    assert first >= 1
    _chain_session({"x": "input", "b": "bias", "t": "hidden/act", "node": "layer.7/op"}, ops, x, b)
    assert rt.programs.builds == first and rt.programs.hits >= 1
    _chain_session({"x": "x", "b": "b", "t": "t", "node": "Sqrt_18_"}, ["Mul", "Sin", "Tanh", "Abs"], x, b)
    assert rt.programs.builds > first  # one op differs: a program of its own


def test_program_key_separates_options_and_devices():
    source = "__kernel void k(__global float* a) { a[0] = 1.0f; }"
    keys = {ProgramCache.key(source, ["-DT=float"], "pocl|cpu"), ProgramCache.key(source, ["-DT=double"], "pocl|cpu"),
            ProgramCache.key(source, ["-DT=float"], "other|gpu"), ProgramCache.key(source + " ", ["-DT=float"], "pocl|cpu")}
    assert len(keys) == 4


def test_kernel_sources_paste_their_included_header():
    header = kernel_source("real8.h")
    for name in ("gemm.cl", "gemm_packed.cl", "conv_direct.cl"):
        text = kernel_source(name)
        assert '#include "' not in text, name
        assert header in text and "#define LOAD8" in text, name
