"""Convs on small feature maps: kernel taps that only ever meet padding are dropped, and 1x1 convs
of a few pixels run as few-row products. Against onnxruntime, with spies on both paths."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from numba_test_helpers import assert_close, run_numba, run_onnxruntime

from onnxplug_numba.kernels import gemv
from onnxplug_numba.ops import _conv, _conv_weights

CASES = [
    # input, weight, attributes, whether taps are dropped
    ((1, 48, 1, 1), (40, 48, 3, 3), {"pads": [1, 1, 1, 1]}, True),
    ((2, 32, 1, 1), (24, 32, 1, 3), {"pads": [0, 1, 0, 1]}, True),
    ((1, 16, 3, 3), (16, 16, 1, 7), {"pads": [0, 3, 0, 3]}, True),
    ((1, 16, 2, 2), (8, 16, 3, 3), {"pads": [2, 2, 2, 2], "dilations": [2, 2]}, True),
    ((1, 8, 2, 3), (8, 8, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}, True),
    ((1, 16, 2, 2), (8, 16, 3, 3), {"pads": [1, 1, 1, 1]}, False),
    ((2, 12, 1), (6, 12, 5), {"pads": [2, 2]}, True),
    ((1, 24, 1, 1), (24, 1, 3, 3), {"pads": [1, 1, 1, 1], "group": 24}, True),
]


def _model(xs: tuple, ws: tuple, attrs: dict, residual: bool) -> tuple[onnx.ModelProto, dict]:
    rng = np.random.default_rng(sum(xs) + sum(ws))
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    x = rng.standard_normal(xs).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))]
    feeds = {"x": x}
    out = "c"
    if residual:
        probe = run_onnxruntime(helper.make_model(helper.make_graph(
            nodes, "p", inputs, [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]),
            opset_imports=[helper.make_opsetid("", 17)], ir_version=8), feeds)[0]
        feeds["z"] = rng.standard_normal(probe.shape).astype(np.float32)
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, list(probe.shape)))
        nodes += [helper.make_node("Add", ["c", "z"], ["s"]), helper.make_node("Relu", ["s"], ["r"])]
        out = "r"
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), feeds


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_small_feature_map_convs_match_onnxruntime(case: tuple, residual: bool, threads: int) -> None:
    xs, ws, attrs, dropped = case
    model, feeds = _model(xs, ws, attrs, residual)
    got, _ = run_numba(model, feeds, threads=threads, level=None)
    assert_close(got, run_onnxruntime(model, feeds), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_taps_dropped_only_where_they_meet_padding_alone(case: tuple) -> None:
    xs, ws, attrs, dropped = case
    spec = _conv.ConvSpec(attrs.get("group", 1), tuple(attrs.get("strides", [1] * (len(xs) - 2))),
                          tuple(attrs.get("dilations", [1] * (len(xs) - 2))), tuple(attrs["pads"]), "NOTSET")
    begin, end, strides, dilations, out = _conv._geometry(spec, xs, ws)
    size = (1, xs[2]) if len(xs) == 3 else xs[2:]
    kernel = (1, ws[2]) if len(ws) == 3 else ws[2:]
    reach = _conv_weights.reaching_taps(kernel, size, begin, end, strides, dilations, out)
    assert (reach is not None) == dropped
    if reach is not None:  # every dropped tap of every output position reads padding only
        for axis, (t0, t1) in enumerate(reach):
            for t in [*range(t0), *range(t1, kernel[axis])]:
                assert all(not 0 <= y * strides[axis] - begin[axis] + t * dilations[axis] < size[axis]
                           for y in range(out[axis]))


def test_few_pixel_pointwise_conv_runs_the_few_row_product(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = gemv.product_band
    monkeypatch.setattr(gemv, "product_band", lambda *a: (calls.append(a[0].shape), original(*a))[1])
    model, feeds = _model((1, 96, 3, 3), (128, 96, 1, 1), {}, residual=True)
    got, _ = run_numba(model, feeds, threads=1, level=None)
    assert_close(got, run_onnxruntime(model, feeds), rtol=1e-4, atol=1e-5)
    assert calls == [(9, 96)]
