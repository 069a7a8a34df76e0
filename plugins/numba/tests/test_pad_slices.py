"""Pad on numba (slice-filled margins, read-once constant pads) against onnxruntime, bitwise."""

from __future__ import annotations

import numpy as np
import pytest
from numba_test_helpers import node_model, run_numba, run_onnxruntime

CASES = [
    # (input shape, pads, axes or None)
    ((2, 3, 5, 6), [0, 0, 1, 2, 0, 0, 3, 1], None),
    ((1, 4, 7), [0, 0, 3, 0, 0, 3], None),
    ((3, 5), [2, 4, 2, 4], None),           # reflect up to size - 1 on both axes
    ((2, 3, 4, 4), [1, 1, 1, 1], [2, 3]),
    ((2, 3, 4, 4), [0, -1, 1, 0, 1, -2], [-3, -2, -1]),  # crop and grow
    ((6,), [5, 5], None),                    # reflect 5 on a length-6 axis
    ((2, 3, 4, 4), [1, 2, 6, 1], [2, 3]),    # wider than the axis: numpy.pad for reflect and wrap
    ((1, 0, 3), [0, 1, 1, 0, 1, 1], None),   # an empty axis
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
@pytest.mark.parametrize("const_pads", [True, False])
def test_pad_matches_onnxruntime(mode: str, case: tuple, const_pads: bool) -> None:
    shape, pads, axes = case
    if 0 in shape and mode != "constant":
        pytest.skip("onnxruntime pads an empty axis only in constant mode")
    if mode in ("reflect", "wrap") and case is CASES[6]:
        pytest.skip("onnxruntime refuses reflect and wrap pads wider than the axis")
    if mode == "wrap" and any(p < 0 for p in pads):
        pytest.skip("onnxruntime's wrap mode takes no negative pads")
    rng = np.random.default_rng(len(shape) * 7 + len(pads))
    x = rng.standard_normal(shape).astype(np.float32)
    extra = {"pads": np.array(pads, np.int64), "value": np.array(2.5, np.float32)}
    if axes is not None:
        extra["axes"] = np.array(axes, np.int64)
    feeds = {"x": x}
    if const_pads:
        model = node_model("Pad", {"x": x}, initializers=extra, opset=19, mode=mode)
    else:
        feeds.update(extra)
        model = node_model("Pad", feeds, opset=19, mode=mode)
    expected = run_onnxruntime(model, feeds)
    got, session = run_numba(model, feeds)
    np.testing.assert_array_equal(got[0], expected[0])
    got_again, _ = run_numba(model, feeds)
    np.testing.assert_array_equal(got_again[0], expected[0])


def test_pad_integers_and_repeated_shapes() -> None:
    """int64 edge padding; one session fed two shapes in turns keeps each shape's geometry."""
    pads = np.array([0, 1, 0, 2], np.int64)
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    b = np.arange(20, dtype=np.int64).reshape(4, 5)
    model = node_model("Pad", {"x": a}, initializers={"pads": pads}, opset=19, mode="edge")
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "n"
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "m"
    import onnxplug as ort
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["numba"])
    for x in (a, b, a, b):
        np.testing.assert_array_equal(session.run(None, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])
