"""Depthwise Conv of the numpy provider (ops/depthwise.py) against onnxruntime: its three
formulations (shifted rows and columns, each with one matmul; channels-last), the columns' scratch
layouts (output-width phase rows with wrapped reads, whole phase rows), many-unit splits and the
product threads. Expected values come from onnxruntime only."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS
from onnxplug.providers.numpy.kernels.conv import depthwise
from tests.numpy_provider.single_node_oracle import assert_matches_oracle

RNG = np.random.default_rng(2024)


def f32(*shape: int) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape), dtype=np.float32)


# (name, x shape, w shape, Conv attributes besides group)
CASES = [
    ("3x3 s1 pads 1", (2, 6, 20, 17), (6, 1, 3, 3), dict(pads=[1, 1, 1, 1])),
    ("3x3 s2 pads 1 even", (1, 5, 22, 20), (5, 1, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    ("3x3 s2 pads 1 odd", (1, 5, 21, 19), (5, 1, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    ("3x3 s2 same upper", (2, 4, 20, 18), (4, 1, 3, 3), dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    ("3x3 s2 same lower", (1, 4, 17, 18), (4, 1, 3, 3), dict(strides=[2, 2], auto_pad="SAME_LOWER")),
    ("3x3 valid", (1, 4, 15, 13), (4, 1, 3, 3), {}),
    ("5x5 dilated pads 4", (1, 3, 18, 16), (3, 1, 5, 5), dict(dilations=[2, 2], pads=[4, 4, 4, 4])),
    ("4x3 s3x2 uneven pads", (1, 4, 19, 17), (4, 1, 4, 3), dict(strides=[3, 2], pads=[0, 2, 3, 1])),
    ("3x3 pads 2 on one side", (1, 3, 12, 14), (3, 1, 3, 3), dict(pads=[2, 0, 0, 2])),
    ("2x4 kernel wider pads", (1, 3, 11, 9), (3, 1, 2, 4), dict(pads=[1, 3, 0, 2])),
    ("5x3 dilated rows only", (2, 3, 16, 10), (3, 1, 5, 3), dict(dilations=[2, 1], pads=[3, 1, 1, 0])),
    ("dilation 3 stride 2", (1, 3, 23, 21), (3, 1, 3, 3), dict(dilations=[3, 3], strides=[2, 2], pads=[3, 3, 3, 3])),
    ("multiplier 3", (1, 2, 12, 13), (6, 1, 3, 3), dict(pads=[1, 1, 1, 1])),
    ("multiplier 2 s2", (2, 3, 11, 12), (6, 1, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    ("1x3 kernel", (1, 4, 9, 16), (4, 1, 1, 3), dict(pads=[0, 1, 0, 1])),
    ("3x1 kernel s2", (1, 4, 16, 9), (4, 1, 3, 1), dict(strides=[2, 1], pads=[1, 0, 1, 0])),
    ("one output row", (1, 3, 3, 30), (3, 1, 3, 3), dict(pads=[0, 1, 0, 1])),
    ("1d s2 pads 2", (2, 3, 40), (3, 1, 5), dict(strides=[2], pads=[2, 2])),
    ("1d dilated valid", (1, 5, 31), (10, 1, 4), dict(dilations=[3])),
    ("3d", (1, 3, 6, 7, 8), (3, 1, 3, 3, 3), dict(strides=[1, 2, 1], pads=[1] * 6)),
]


@pytest.mark.parametrize("name,xs,ws,attrs", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("bias", [False, True], ids=["no bias", "bias"])
@pytest.mark.parametrize("formulation", ["default", "columns only", "small units"])
def test_depthwise_conv_matches_onnxruntime(monkeypatch, name, xs, ws, attrs, bias, formulation):
    """Every layout, with the default choice of formulation (shifted rows at stride 1), with
    columns forced for every shape, and in units of a channel or two (with a unit's last block
    shorter)."""
    options = None
    if formulation == "columns only":
        options = {"depthwise_channels_last_max_out": "0", "depthwise_shifted_rows": "0"}
    if formulation == "small units":
        options = {"depthwise_block_bytes": str(6 << 10)}
    feeds = {"x": f32(*xs), "w": f32(*ws)}
    if bias:
        feeds["b"] = f32(ws[0])
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, group=xs[1], provider_options=options,
                          **attrs)


@pytest.mark.parametrize("size, stride", [(7, 1), (14, 2), (8, 1), (9, 2)], ids=["7x7", "14x14 s2", "8x8", "9x9 s2"])
def test_small_outputs_use_channels_last_and_match(monkeypatch, size, stride):
    """Outputs of at most depthwise_channels_last_max_out (64) positions go channels-last (spied on), many channels."""
    calls = []
    real = depthwise._channels_last
    monkeypatch.setattr(depthwise, "_channels_last", lambda *a: calls.append(1) or real(*a))
    feeds = {"x": f32(2, 96, size, size), "w": f32(96, 1, 3, 3), "b": f32(96)}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, group=96, strides=[stride, stride],
                          pads=[1, 1, 1, 1])
    assert calls, "channels-last formulation was not used"


@pytest.mark.parametrize("pads, stride, used", [([1, 1, 1, 1], 1, True), ([0, 2, 1, 0], 1, True),
                                                ([1, 1, 1, 1], 2, False)], ids=["s1", "s1 uneven", "s2"])
def test_stride_one_uses_shifted_rows(monkeypatch, pads, stride, used):
    """Stride-1 2-D convolutions go to the shifted-rows formulation (spied on), others do not."""
    calls = []
    real = depthwise._shifted_rows
    monkeypatch.setattr(depthwise, "_shifted_rows", lambda *a: calls.append(1) or real(*a))
    feeds = {"x": f32(2, 16, 24, 20), "w": f32(32, 1, 3, 3), "b": f32(32)}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, group=16, strides=[stride, stride],
                          pads=pads)
    assert bool(calls) == used


@pytest.mark.skipif(PRODUCT_THREADS.threads < 2, reason="needs two product threads")
@pytest.mark.parametrize("images, stride", [(1, 1), (1, 2), (3, 1)], ids=["batch 1", "batch 1 s2", "batch 3"])
def test_large_depthwise_runs_units_on_both_threads(monkeypatch, parallel_for_calls, images, stride):
    """Work large enough to split (here: made so by weighting depthwise work up) goes in units for
    both threads at batch 1, and in a batch not divisible by the thread count; every unit's
    channels are checked against onnxruntime."""
    ran = parallel_for_calls(depthwise)
    size = 64 * stride  # 40 x 64 x 64 outputs per image
    feeds = {"x": f32(images, 40, size, size), "w": f32(40, 1, 3, 3), "b": f32(40)}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, group=40, strides=[stride, stride],
                          pads=[1, 1, 1, 1],
                          provider_options={"depthwise_block_bytes": str(512 << 10), "depthwise_mac_weight": "64"})
    (count, done), = ran
    assert done and count >= 2 and count % 2 == 0, (count, done)


def test_non_finite_inputs_stay_in_their_own_outputs():
    """Wrapped reads of the output-width rows are zeroed, never multiplied: an inf at a row's end
    must not leak into the next row's first output (and NaN stays where onnxruntime puts it)."""
    x = f32(1, 4, 10, 10)
    x[0, 0, 3, -1] = np.inf
    x[0, 1, 5, 0] = np.nan
    feeds = {"x": x, "w": np.abs(f32(4, 1, 3, 3)) + 0.1, "b": f32(4)}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, group=4, pads=[1, 1, 1, 1])


@pytest.mark.parametrize("name,xs,ws,attrs", CASES[:12], ids=[c[0] for c in CASES[:12]])
def test_reused_workspace_contents_never_reach_outputs(monkeypatch, poisoned_scratch, name, xs, ws, attrs):
    """Units take their scratch from a buffer reused across units and calls, zeroing only the
    padding they read: with the buffer filled with NaN before every unit, outputs still match."""
    feeds = {"x": f32(*xs), "w": f32(*ws), "b": f32(ws[0])}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, group=xs[1],
                          provider_options={"depthwise_channels_last_max_out": "16"}, **attrs)
