"""Liveness: intermediates are dropped after their last reader, so the peak stays near the largest live set."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug.executor import RunStats, run_plan
from onnxplug.testing.model_suite import build, sample_inputs
from tests.conftest import make_model


def _chain_model(length: int):
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"relu{i}") for i in range(length)]
    return make_model(nodes, [("v0", TensorProto.FLOAT, [1024, 1024])],
                      [(f"v{length}", TensorProto.FLOAT, [1024, 1024])])


def test_chain_peak_is_two_buffers_not_all():
    length = 20
    sess = ort.InferenceSession(_chain_model(length), providers=["numpy"])
    stats = RunStats()
    x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    run_plan(sess.engine.plan, {"v0": x}, None, stats)
    one = x.nbytes
    # Without liveness all 20 intermediates (80 MiB) would be live; with it, at most two at once.
    assert stats.peak_live_bytes <= 2 * one
    assert stats.peak_live_bytes >= one


def test_resnet18_peak_well_below_sum_of_intermediates():
    model = build("resnet18")
    feeds = sample_inputs("resnet18", batch=1)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["numpy"])
    stats = RunStats()
    out = run_plan(sess.engine.plan, feeds, None, stats)
    assert out
    released = {n for s in sess.engine.plan.steps for n in s.release}
    produced = [n for s in sess.engine.plan.steps for n in s.outputs if n]
    assert set(produced) - set(sess.engine.plan.outputs.values()) <= released
    # A runtime keeping every intermediate would peak at produced_bytes.
    assert stats.peak_live_bytes < stats.produced_bytes / 4
