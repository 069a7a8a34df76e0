"""Kernel sources, the program cache, and build failures carrying the OpenCL build log."""

from __future__ import annotations

import pytest

from onnxplug_sdk import errors

from onnxplug_opencl.errors import OpenCLBuildError
from onnxplug_opencl.runtime.programs import kernel_source, render


def test_kernels_ship_as_cl_files():
    assert "void gemm(" in kernel_source("gemm.cl") and "__kernel" in kernel_source("gemm.cl")
    assert "${body}" in kernel_source("elementwise.cl")


def test_render_fills_template_fields():
    text = render("elementwise.cl", pragmas="", name="k_test", rank=1, params="", index="", loads="",
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
