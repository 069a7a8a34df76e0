"""Windowed pools of the numpy provider keep their geometry (and AveragePool's tap counts) per input
size (ops/_pool_util.py PoolKernel): one session fed interleaved sizes gives onnxruntime's values on
every call, builds one geometry per size, and the kept tap counts are read-only. Expected values come
from onnxruntime only."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug
from onnxplug.providers.numpy.ops import _pool_util

RNG = np.random.default_rng(41)

CASES = [
    ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2])),
]


@pytest.mark.parametrize("op_type,attrs", CASES, ids=[f"{c[0]} {i}" for i, c in enumerate(CASES)])
def test_interleaved_sizes_match_onnxruntime_and_build_once(monkeypatch, op_type, attrs):
    built = []
    real = _pool_util.PoolGeometry

    class Counting(real):
        def __init__(self, attr, in_sp, *args):
            built.append(tuple(in_sp))
            super().__init__(attr, in_sp, *args)

    monkeypatch.setattr(_pool_util, "PoolGeometry", Counting)
    node = helper.make_node(op_type, ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, None, None])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    ours = onnxplug.InferenceSession(model, providers=["numpy"])
    oracle = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    sizes = [(1, 3, 7, 9), (2, 3, 12, 5), (1, 3, 7, 9), (2, 3, 12, 5), (3, 3, 7, 9)]
    for shape in sizes:
        x = RNG.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(ours.run(None, {"x": x})[0], oracle.run(None, {"x": x})[0], rtol=1e-6, atol=1e-6)
    assert sorted(built) == [(7, 9), (12, 5)], built


def test_kept_tap_counts_are_read_only():
    g = _pool_util.PoolGeometry(lambda name, default=None: dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]).get(name, default),
                                (5, 6))
    counts = g.counts(False)
    assert g.counts(False) is counts and not counts.flags.writeable
    np.testing.assert_array_equal(counts[0, 0], 4)
