"""Element types: fp16 and fp64 are claimed only when the device has the extension."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_helpers import assert_close, helper, make_model, run_both

import onnxplug as ort
from onnxplug_opencl.engine.dtypes import device_supports
from onnxplug_opencl.runtime.devices import DeviceEntry


def _entry(fp16: bool, fp64: bool) -> DeviceEntry:
    return DeviceEntry(0, 0, 0, "p", "d", "gpu", "OpenCL 3.0", 1, 1 << 30, 1 << 15, 256, fp16, fp64)


def test_capability_table():
    assert not device_supports(_entry(False, False), np.float16)
    assert not device_supports(_entry(False, False), np.float64)
    assert device_supports(_entry(True, True), np.float16) and device_supports(_entry(True, True), np.float64)
    assert device_supports(_entry(False, False), np.int64)
    assert not device_supports(_entry(True, True), np.dtype(object))


def _assignments(x: np.ndarray) -> list[str]:
    model = make_model([helper.make_node("Add", ["x", "x"], ["y"])], {"x": x}, ["y"])
    return [a.provider for a in ort.InferenceSession(model, providers=["opencl"]).get_node_assignments()]


def test_half_precision_follows_the_device(rt):
    placed = _assignments(np.ones((2, 2), np.float16))
    assert placed == (["opencl"] if rt.entry.fp16 else ["numpy"])


def test_double_precision_follows_the_device(rt, rng):
    x = rng.standard_normal((3, 4))
    placed = _assignments(x)
    assert placed == (["opencl"] if rt.entry.fp64 else ["numpy"])
    if not rt.entry.fp64:
        pytest.skip("no fp64 on this device")
    nodes = [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("MatMul", ["e", "w"], ["y"])]
    feeds = {"x": x}
    got, want, _ = run_both(make_model(nodes, feeds, ["y"], {"w": rng.standard_normal((4, 5))}), feeds)
    assert_close(got, want, rtol=1e-12, atol=1e-12)
