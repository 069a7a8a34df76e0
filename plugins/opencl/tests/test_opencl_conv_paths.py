"""Each convolution path (direct stride-1 kernel, packed im2col + panel GEMM, plain im2col + GEMM,
depthwise) and the 2-D MaxPool kernel against onnxruntime; the panel GEMM against numpy.

Engine-level cases run on a runtime with profiling events on, so each also checks which kernels
ran: a heuristic change that silently routes every case to one path would otherwise go unnoticed.
"""

from __future__ import annotations

import numpy as np
import onnxruntime

import onnxplug as ort
import pytest
from opencl_helpers import assert_close, helper, make_model, run_both

from onnxplug_opencl.engine.conv import ConvGeometry, conv2d, pack_weights
from onnxplug_opencl.engine.gemm import Epilogue
from onnxplug_opencl.engine.packed_gemm import (
    PanelOperand,
    PanelTiles,
    gemm_packed,
    pack_rows,
    panel_count,
    pick_panel_tiles,
)


@pytest.fixture(scope="module")
def prt():
    """A separate runtime on the default device whose launches keep profiling events."""
    import os

    import onnxplug_opencl
    from onnxplug_opencl.runtime.context import PROFILE_ENV, ClRuntime

    entry = onnxplug_opencl.cl_runtime().entry
    old = os.environ.get(PROFILE_ENV)
    os.environ[PROFILE_ENV] = "1"
    try:
        runtime = ClRuntime(entry)
    finally:
        if old is None:
            del os.environ[PROFILE_ENV]
        else:
            os.environ[PROFILE_ENV] = old
    if entry.kind != "cpu":
        pytest.skip("the packed and direct convolution paths run on CPU devices")
    return runtime


def _ort_conv(x, w, b, attrs, residual=None, activation=None):
    """onnxruntime's Conv (+ Add + Relu/Clip) on the same data: the oracle."""
    inputs = {"x": x} | ({"r": residual} if residual is not None else {})
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs)]
    tail = "c"
    if residual is not None:
        nodes.append(helper.make_node("Add", ["c", "r"], ["a"]))
        tail = "a"
    if activation == "relu":
        nodes.append(helper.make_node("Relu", [tail], ["y"]))
    elif activation == "clip":
        nodes.append(helper.make_node("Clip", [tail, "lo", "hi"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", [tail], ["y"]))
    inits = {"w": w, "b": b, "lo": np.array(-0.5, x.dtype), "hi": np.array(0.75, x.dtype)}
    model = make_model(nodes, inputs, ["y"], inits)
    return onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, inputs)[0]


# (x shape, w shape, attrs, kernels expected to run)
CASES = [
    # stride 1, long rows: the direct kernel (several panels, a partial one, M not a multiple of 6)
    ((1, 5, 20, 37), (7, 5, 3, 3), dict(pads=[1, 1, 1, 1]), {"pad_planes", "conv_direct"}),
    ((2, 6, 11, 40), (100, 3, 3, 3), dict(pads=[1, 2, 0, 1], group=2), {"pad_planes", "conv_direct"}),
    ((1, 4, 30, 41), (13, 4, 3, 3), dict(dilations=[2, 1], pads=[2, 1, 2, 1]), {"pad_planes", "conv_direct"}),
    ((1, 3, 9, 60), (8, 3, 1, 5), {}, {"conv_direct"}),  # no padding: reads x itself
    ((2, 300, 7, 7), (17, 300, 1, 1), {}, {"conv_direct"}),  # 1x1: contiguous stores, channels in 2 chunks
    ((1, 40, 33, 33), (20, 40, 3, 3), dict(pads=[1, 1, 1, 1]), {"pad_planes", "conv_direct"}),  # 360 k: 2 chunks
    # strided or narrow outputs: im2col straight into panels, then the panel GEMM
    ((1, 5, 15, 16), (9, 5, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1]), {"im2col_packed", "gemm_packed"}),
    ((1, 8, 7, 7), (12, 8, 3, 3), dict(pads=[1, 1, 1, 1]), {"im2col_packed", "gemm_packed"}),
    ((2, 6, 10, 11), (9, 2, 3, 3), dict(group=3, strides=[2, 1], pads=[0, 1, 2, 1]), {"im2col_packed", "gemm_packed"}),
    ((1, 3, 23, 23), (64, 3, 7, 7), dict(strides=[2, 2], pads=[3, 3, 3, 3]), {"im2col_packed", "gemm_packed"}),
    ((1, 130, 9, 9), (40, 130, 3, 3), dict(strides=[2, 2], dilations=[2, 2], pads=[2, 2, 2, 2]),
     {"im2col_packed", "gemm_packed"}),
    # rows of at least 16 outputs: panels inside one row are vector copies (stride 2 and 1)
    ((1, 3, 40, 70), (8, 3, 7, 7), dict(strides=[2, 2], pads=[3, 3, 3, 3]), {"im2col_packed", "gemm_packed"}),
    ((1, 4, 12, 16), (6, 4, 3, 3), dict(pads=[1, 1, 1, 1], dilations=[1, 1]), {"im2col_packed", "gemm_packed"}),
    ((1, 2, 9, 40), (5, 2, 3, 2), dict(strides=[1, 2], dilations=[2, 3], pads=[2, 0, 1, 3]),
     {"im2col_packed", "gemm_packed"}),
    # depthwise: narrow rows (scalar), wide rows (eight columns per vector step), stride 2, MG = 2,
    # a 5x5 window, and a column dilation (scalar path only)
    ((1, 6, 9, 9), (6, 1, 3, 3), dict(group=6, pads=[1, 1, 1, 1]), {"dwconv"}),
    ((1, 4, 12, 40), (4, 1, 3, 3), dict(group=4, pads=[1, 1, 1, 1]), {"dwconv"}),
    ((2, 3, 11, 37), (6, 1, 3, 3), dict(group=3, strides=[2, 2], pads=[1, 1, 1, 1]), {"dwconv"}),
    ((1, 2, 9, 44), (2, 1, 5, 5), dict(group=2, strides=[1, 2], pads=[2, 2, 2, 2]), {"dwconv"}),
    ((1, 3, 10, 20), (3, 1, 3, 3), dict(group=3, dilations=[1, 2], pads=[1, 2, 1, 2]), {"dwconv"}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs,kernels", CASES, ids=str)
@pytest.mark.parametrize("fused", ["bias", "residual_relu", "clip"])
def test_conv_paths_against_onnxruntime(prt, rng, x_shape, w_shape, attrs, kernels, fused):
    from onnxplug_opencl.runtime import profiling

    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    geo = _geometry(attrs, w.shape)
    out_shape = _ort_conv(x, w, b, attrs).shape
    residual = rng.standard_normal(out_shape).astype(np.float32) if fused == "residual_relu" else None
    activation = {"bias": None, "residual_relu": "relu", "clip": "clip"}[fused]
    epi = Epilogue(bias=prt.to_device(b), residual=prt.to_device(residual) if residual is not None else None)
    if activation:
        epi.activation = activation
        epi.clip = (0.0, np.inf) if activation == "relu" else (-0.5, 0.75)
    profiling.reset(prt)
    packed = pack_weights(prt, w, int(attrs.get("group", 1)))
    got = conv2d(prt, prt.to_device(x), prt.to_device(w), geo, epi, packed=packed).get()
    ran = {item.label.split()[0] for item in profiling.collect(prt)}
    want = _ort_conv(x, w, b, attrs, residual, activation)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert ran == kernels


def _geometry(attrs, w_shape):
    """The 2-D geometry the attributes describe (explicit pads only)."""
    pads = attrs.get("pads", [0, 0, 0, 0])
    return ConvGeometry(tuple(w_shape[2:]), tuple(attrs.get("strides", [1, 1])), tuple(attrs.get("dilations", [1, 1])),
                        (pads[0], pads[1]), (pads[2], pads[3]), int(attrs.get("group", 1)))


def _numpy_conv(x, w, b, attrs):
    """A direct numpy convolution (windows of the padded input, one einsum per group): the float64 oracle,
    onnxruntime having no double Conv."""
    pads = attrs.get("pads", [0, 0, 0, 0])
    (sh, sw), (dh, dw), g = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1]), attrs.get("group", 1)
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    kh, kw = w.shape[2:]
    win = np.lib.stride_tricks.sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]  # [N, C, OH, OW, KH, KW]
    cg, mg = x.shape[1] // g, w.shape[0] // g
    parts = [np.einsum("nchwij,mcij->nmhw", win[:, i * cg:(i + 1) * cg], w[i * mg:(i + 1) * mg]) for i in range(g)]
    return np.concatenate(parts, axis=1) + b[None, :, None, None]


def test_conv_paths_in_double_precision(rt, rng):
    if not rt.entry.fp64:
        pytest.skip("device has no fp64")
    depthwise = next(c for c in CASES if c[3] == {"dwconv"} and c[2].get("strides") == [2, 2])
    for x_shape, w_shape, attrs, _ in (CASES[1], CASES[8], depthwise):  # direct, packed im2col, depthwise
        x = rng.standard_normal(x_shape)
        w = rng.standard_normal(w_shape)
        b = rng.standard_normal(w_shape[0])
        model = make_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)], {"x": x}, ["y"],
                           {"w": w, "b": b})
        so = ort.SessionOptions()
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        session = ort.InferenceSession(model, so, providers=["opencl"])
        got = session.run(None, {"x": x})[0]
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, _numpy_conv(x, w, b, attrs), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("stride", [1, 2])
def test_resnet_block_through_a_session(rng, stride):
    """Conv -> BN -> Add -> Relu, fused into one step, on the direct and the im2col path."""
    x = rng.standard_normal((1, 16, 24, 24)).astype(np.float32)
    out_hw = 24 // stride
    r = rng.standard_normal((1, 24, out_hw, out_hw)).astype(np.float32)
    inits = {"w": rng.standard_normal((24, 16, 3, 3)).astype(np.float32) * 0.2,
             "s": rng.random(24).astype(np.float32) + 0.5, "bb": rng.standard_normal(24).astype(np.float32),
             "m": rng.standard_normal(24).astype(np.float32), "v": rng.random(24).astype(np.float32) + 0.1}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[stride, stride]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),
             helper.make_node("Add", ["n", "r"], ["a"]), helper.make_node("Relu", ["a"], ["y"])]
    got, want, _ = run_both(make_model(nodes, {"x": x, "r": r}, ["y"], inits), {"x": x, "r": r})
    assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n,k,batch,tiles", [
    (7, 33, 600, (1, 1), PanelTiles(96, 128)),
    (100, 50, 90, (2, 3), PanelTiles(24, 16)),
    (96, 128, 256, (1, 1), PanelTiles(48, 32)),
    (13, 1, 5, (1, 2), None),
])
def test_panel_gemm_against_numpy(rt, rng, m, n, k, batch, tiles):
    if rt.entry.kind != "cpu":
        pytest.skip("the panel GEMM runs on CPU devices")
    nb = batch[0] * batch[1]
    a = rng.standard_normal((batch[1], m, k), dtype=np.float32)  # shared across b1, one per b2
    b = rng.standard_normal((nb, k, n), dtype=np.float32)
    bias = rng.standard_normal((batch[1], m), dtype=np.float32)
    res = rng.standard_normal((nb, m, n), dtype=np.float32)
    a_packed = pack_rows(a)
    b_packed = pack_rows(b.transpose(0, 2, 1), 16)  # B panels are the rows of B^T in 16-wide panels
    out = rt.empty((nb, m, n), np.float32)
    b_stride = b_packed.shape[1]
    epi = Epilogue(bias=rt.to_device(bias), bias_sm=1, bias_sn=0, bias_s2=m, residual=rt.to_device(res),
                   activation="relu")
    gemm_packed(rt, m, n, k, PanelOperand(rt.to_device(a_packed), 0, 0, a_packed.shape[1]),
                PanelOperand(rt.to_device(b_packed), 0, batch[1] * b_stride, b_stride), out, 0, n, batch[1] * m * n,
                m * n, batch=batch, epilogue=epi, tiles=tiles)
    a_full = np.tile(a, (batch[0], 1, 1))
    want = np.maximum(a_full @ b + np.tile(bias, (batch[0], 1))[:, :, None] + res, 0)
    np.testing.assert_allclose(out.get(), want, rtol=1e-4, atol=1e-3)


def test_panel_tile_choice_is_valid_and_balances_short_products():
    for m, n, k in [(64, 3136, 576), (512, 49, 4608), (1, 1000, 512), (1024, 1024, 1024)]:
        t = pick_panel_tiles(m, n, k, 1, 2)
        assert t.tm % 6 == 0 and t.tn % 16 == 0
    # 512 x 49: one 96-row tile per group would leave 6 groups for 2 units; a finer tile is chosen
    t = pick_panel_tiles(512, 49, 4608, 1, 2)
    assert panel_count(512, t.tm) * panel_count(49, t.tn) >= 8


def test_pack_rows_layout():
    a = np.arange(2 * 7 * 3, dtype=np.float32).reshape(2, 7, 3)
    packed = pack_rows(a, 6).reshape(2, 2, 3, 6)  # [G][panel][k][row in panel]
    np.testing.assert_array_equal(packed[1, 0, 2], a[1, :6, 2])
    np.testing.assert_array_equal(packed[0, 1, 1], [a[0, 6, 1], 0, 0, 0, 0, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8])
@pytest.mark.parametrize("attrs", [
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    dict(kernel_shape=[3, 2], strides=[1, 2], pads=[0, 1, 2, 0], ceil_mode=1),
    dict(kernel_shape=[2, 2], dilations=[2, 3]),
    dict(kernel_shape=[5, 5], strides=[3, 3], pads=[2, 2, 2, 2], ceil_mode=1),
    dict(kernel_shape=[1, 4], auto_pad="SAME_UPPER"),
], ids=str)
def test_maxpool2d_against_onnxruntime(rng, dtype, attrs):
    x = (rng.standard_normal((2, 3, 13, 11)) * 50).astype(dtype)
    model = make_model([helper.make_node("MaxPool", ["x"], ["y"], **attrs)], {"x": x}, ["y"], opset=12)
    got, want, _ = run_both(model, {"x": x})
    assert_close(got, want, rtol=0, atol=0)


def test_profiling_records_each_launch(prt, rng):
    from onnxplug_opencl.runtime import profiling

    x = prt.to_device(rng.standard_normal((1, 5, 20, 37)).astype(np.float32))
    w = rng.standard_normal((7, 5, 3, 3)).astype(np.float32)
    geo = _geometry(dict(pads=[1, 1, 1, 1]), w.shape)
    profiling.reset(prt)
    conv2d(prt, x, prt.to_device(w), geo, packed=pack_weights(prt, w, 1))
    launches = profiling.collect(prt)
    assert [item.label.split()[0] for item in launches] == ["pad_planes", "conv_direct"]
    assert all(item.device_ms > 0 for item in launches)
    rows = profiling.summarize(launches)
    assert len(rows) == 2 and rows[0][2] >= rows[1][2]
    assert profiling.collect(prt) == []



@pytest.mark.parametrize("a_shape,k,n", [((2, 7, 33), 33, 50), ((1, 3, 20), 20, 17), ((130, 64), 64, 1)], ids=str)
def test_packed_weights_matmul_engine(prt, rng, a_shape, k, n):
    """``x @ W`` with W packed once and x read in place, with column bias, residual and Clip, against numpy."""
    from onnxplug_opencl.engine.packed_matmul import matmul_packed, pack_columns
    from onnxplug_opencl.runtime import profiling

    a = rng.standard_normal(a_shape).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    res = rng.standard_normal(a_shape[:-1] + (n,)).astype(np.float32)
    epi = Epilogue(bias=prt.to_device(bias), bias_sm=0, bias_sn=1, residual=prt.to_device(res), activation="clip",
                   clip=(-1.0, 2.0))
    profiling.reset(prt)
    got = matmul_packed(prt, prt.to_device(a), pack_columns(prt, w), epi).get()
    assert [item.label.split()[0] for item in profiling.collect(prt)] == ["gemm_packed"]
    np.testing.assert_allclose(got, np.clip(a @ w + bias + res, -1.0, 2.0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_layers_through_a_session(rng, dtype):
    """MatMul with constant weights (alone, + bias + Relu, + residual) against onnxruntime; a 1-D
    input falls back to the plain GEMM."""
    x = rng.standard_normal((2, 9, 24)).astype(dtype)
    v = rng.standard_normal(24).astype(dtype)
    inits = {"w1": rng.standard_normal((24, 40)).astype(dtype), "b1": rng.standard_normal(40).astype(dtype),
             "w2": rng.standard_normal((40, 24)).astype(dtype), "w3": rng.standard_normal((24, 5)).astype(dtype)}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["o"]),
             helper.make_node("Add", ["o", "x"], ["y"]), helper.make_node("MatMul", ["y", "w3"], ["z"]),
             helper.make_node("MatMul", ["v", "w3"], ["u"])]
    model = make_model(nodes, {"x": x, "v": v}, ["y", "z", "u"], inits)
    if dtype == np.float64:  # numpy as the oracle, every node on opencl
        so = ort.SessionOptions()
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        y, z, u = ort.InferenceSession(model, so, providers=["opencl"]).run(None, {"x": x, "v": v})
        want_y = np.maximum(x @ inits["w1"] + inits["b1"], 0) @ inits["w2"] + x
        np.testing.assert_allclose(y, want_y, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(z, want_y @ inits["w3"], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(u, v @ inits["w3"], rtol=1e-10, atol=1e-10)
        return
    got, want, _ = run_both(model, {"x": x, "v": v})
    assert_close(got, want, rtol=1e-4, atol=1e-4)
