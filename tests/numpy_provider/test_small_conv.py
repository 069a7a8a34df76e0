"""Small stride-1 2-D convolutions of the numpy provider (``padded_rows.conv_padded_rows``: im2col
over padded-width rows, bias as a weight column, scratch kept per thread and shape), the
strided-window im2col with the bias as a weight column, and the FusedConv epilogue (residual,
activations, Relu against an array of zeros), against onnxruntime.

Each case also checks, with a spy, whether the padded-rows path ran, so the fallbacks (strides,
wide padded rows, large products, cropping pads, other dtypes, the switch) are tested as such.
Expected values come from onnxruntime only (onnx.reference where onnxruntime lacks the dtype)."""

from __future__ import annotations

import threading

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug
from onnxplug.providers.numpy.runtime import blas
from onnxplug.providers.numpy.kernels.conv import dispatch, padded_rows
from onnxplug.providers.numpy.runtime import scratch
from onnxplug.providers.numpy.runtime.threaded_blas import threaded_blas
from tests.numpy_provider.single_node_oracle import assert_matches_oracle, assert_same, kernels_only

RNG = np.random.default_rng(77)


def f32(*shape: int) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape), dtype=np.float32)


@pytest.fixture
def padded_rows_calls(calls_of) -> list[tuple]:
    """Records the (x shape, group) of every call to the padded-rows path (im2col or row products)."""
    return calls_of(padded_rows, "conv_padded_rows", lambda x, w, b, scratch, group, epilogue, weights: (x.shape, group))


# (name, x shape, w shape, Conv attributes): all go to the padded-rows path
ROWS_CASES = [
    ("3x3 pads 1", (1, 3, 32, 32), (16, 3, 3, 3), dict(pads=[1, 1, 1, 1])),
    ("3x3 pads 1 batch 3", (3, 16, 20, 18), (8, 16, 3, 3), dict(pads=[1, 1, 1, 1])),
    ("3x3 valid", (2, 5, 17, 19), (7, 5, 3, 3), {}),
    ("uneven pads", (1, 4, 15, 21), (6, 4, 3, 3), dict(pads=[0, 2, 1, 0])),
    ("pads on one side", (1, 4, 14, 20), (5, 4, 3, 3), dict(pads=[2, 0, 0, 2])),
    ("5x5 pads 2", (2, 3, 24, 24), (4, 3, 5, 5), dict(pads=[2, 2, 2, 2])),
    ("4x2 even kernel", (1, 3, 16, 24), (5, 3, 4, 2), dict(pads=[1, 0, 2, 1])),
    ("1x3 kernel", (1, 6, 9, 30), (4, 6, 1, 3), dict(pads=[0, 1, 0, 1])),
    ("3x1 kernel", (1, 6, 30, 12), (4, 6, 3, 1), dict(pads=[1, 0, 1, 0])),
    ("dilation 2", (1, 4, 26, 30), (6, 4, 3, 3), dict(dilations=[2, 2], pads=[2, 2, 2, 2])),
    ("dilation 3x1", (2, 3, 25, 20), (4, 3, 3, 3), dict(dilations=[3, 1], pads=[3, 1, 3, 1])),
    ("groups 2", (2, 8, 18, 20), (6, 4, 3, 3), dict(group=2, pads=[1, 1, 1, 1])),
    ("groups 4, 2 channels each", (1, 8, 16, 24), (12, 2, 3, 3), dict(group=4, pads=[1, 1, 1, 1])),
    ("same upper", (1, 4, 16, 22), (3, 4, 4, 4), dict(auto_pad="SAME_UPPER")),
    ("same lower", (1, 4, 16, 22), (3, 4, 4, 4), dict(auto_pad="SAME_LOWER")),
    ("one output row", (1, 3, 3, 40), (2, 3, 3, 3), dict(pads=[0, 1, 0, 1])),
    ("one output channel", (2, 5, 12, 16), (1, 5, 3, 3), dict(pads=[1, 1, 1, 1])),
]


@pytest.mark.parametrize("name,xs,ws,attrs", ROWS_CASES, ids=[c[0] for c in ROWS_CASES])
@pytest.mark.parametrize("bias", [False, True], ids=["no bias", "bias"])
def test_padded_rows_conv_matches_onnxruntime(padded_rows_calls, name, xs, ws, attrs, bias):
    feeds = {"x": f32(*xs), "w": f32(*ws)}
    if bias:
        feeds["b"] = f32(ws[0])
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, **attrs)
    assert padded_rows_calls, "the padded-rows path did not run"


def test_float64_conv_uses_padded_rows(padded_rows_calls):
    feeds = {"x": f32(2, 4, 12, 16).astype(np.float64), "w": f32(6, 4, 3, 3).astype(np.float64),
             "b": f32(6).astype(np.float64)}
    assert_matches_oracle("Conv", feeds, oracle="ref", rtol=1e-10, atol=1e-10, opset=17, pads=[1, 1, 1, 1])
    assert padded_rows_calls


# (name, x shape, w shape, Conv attributes, numpy provider options): none of these go to the padded-rows path
FALLBACK_CASES = [
    ("stride 2", (1, 4, 20, 20), (6, 4, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1]), None),
    ("stride 1x2", (1, 4, 20, 20), (6, 4, 3, 3), dict(strides=[1, 2], pads=[1, 1, 1, 1]), None),
    ("stride 2 groups 2", (2, 6, 17, 15), (8, 3, 3, 3), dict(strides=[2, 2], group=2, pads=[1, 0, 1, 2]), None),
    ("stride 2 dilation 2", (1, 4, 21, 19), (6, 4, 3, 3), dict(strides=[2, 2], dilations=[2, 2], pads=[2, 2, 2, 2]),
     None),
    ("padded row much wider than output", (1, 8, 7, 7), (8, 8, 3, 3), dict(pads=[1, 1, 1, 1]), None),
    ("1x1 kernel", (1, 8, 10, 10), (4, 8, 1, 1), {}, None),
    ("1-D", (2, 4, 30), (5, 4, 3), dict(pads=[1, 1]), None),
    ("3-D", (1, 3, 6, 8, 8), (4, 3, 3, 3, 3), dict(pads=[1] * 6), None),
    ("depthwise", (1, 6, 16, 16), (6, 1, 3, 3), dict(group=6, pads=[1, 1, 1, 1]), None),
    ("product large enough to split", (1, 8, 20, 20), (8, 8, 3, 3), dict(pads=[1, 1, 1, 1]),
     {"split_product_macs": "1000"}),
    ("product split in bands, groups 2", (1, 8, 20, 20), (6, 4, 3, 3), dict(group=2, pads=[1, 1, 1, 1]),
     {"split_product_macs": "1000"}),
    ("product split by image, stride 2", (3, 4, 20, 20), (6, 4, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1]),
     {"split_product_macs": "1000"}),
    ("switched off", (1, 8, 20, 20), (8, 8, 3, 3), dict(pads=[1, 1, 1, 1]),
     {"padded_rows": "0"}),
    ("switched off, bias added after the product", (2, 8, 20, 20), (8, 8, 3, 3), dict(pads=[1, 1, 1, 1]),
     {"padded_rows": "0", "im2col_bias_row": "0"}),
]


@pytest.mark.parametrize("xs,ws,by_weight_rows", [((1, 16, 4, 4), (64, 16, 3, 3), True),
                                                  ((1, 8, 20, 20), (8, 8, 3, 3), False),
                                                  ((2, 16, 4, 4), (64, 16, 3, 3), False)],
                         ids=["weights over twice the columns", "columns larger", "an image per thread"])
def test_split_im2col_product_by_weight_rows_or_bands(monkeypatch, parallel_for_calls, xs, ws, by_weight_rows):
    """With fewer images than threads, a strided-window convolution whose weights are more than twice
    its columns splits its product by weight rows (each thread packs half the weights); otherwise
    bands of output rows (or images) go to the threads with their own columns. Both match."""
    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    whole = []
    real_matmul = dispatch.matmul
    monkeypatch.setattr(dispatch, "matmul", lambda a, b, out=None: whole.append(a.shape) or real_matmul(a, b, out))
    units = parallel_for_calls(dispatch)
    feeds = {"x": f32(*xs), "w": f32(*ws), "b": f32(ws[0])}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, strides=[2, 2], pads=[1, 1, 1, 1],
                          provider_options={"split_product_macs": "1000"})
    assert (whole, units) == (([(1, ws[0], 16 * 9)], []) if by_weight_rows else ([], [(2, True)]))


@pytest.mark.parametrize("images", [1, 3])
@pytest.mark.parametrize("band_bytes,bands", [(16384, 10), (65536, None)], ids=["bands", "under 4x"])
def test_large_image_columns_go_in_bands_of_rows(monkeypatch, parallel_for_calls, images, band_bytes, bands):
    """An image whose columns take at least 4x the im2col_band_bytes option (here 148 taps x 17 x 16 outputs
    x 4 bytes = 161 KB) goes in bands of output rows whose columns take about that much: 10 bands
    of 2 rows (the last empty). Under 4x, one unit per image (or per thread, for a single image).
    Each band copies, multiplies and adds its bias on its own; all match onnxruntime."""
    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    units = parallel_for_calls(dispatch)
    feeds = {"x": f32(images, 3, 33, 31), "w": f32(8, 3, 7, 7), "b": f32(8)}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, strides=[2, 2], pads=[3, 3, 3, 3],
                          provider_options={"split_product_macs": "1000", "im2col_band_bytes": str(band_bytes)})
    expected = images * bands if bands else max(images, 2)
    assert units == [(expected, True)]


@pytest.mark.parametrize("name,xs,ws,attrs,options", FALLBACK_CASES, ids=[c[0] for c in FALLBACK_CASES])
def test_other_convolutions_fall_back_and_match(padded_rows_calls, name, xs, ws, attrs, options):
    feeds = {"x": f32(*xs), "w": f32(*ws), "b": f32(ws[0])}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, provider_options=options, **attrs)
    assert not padded_rows_calls


def test_cropping_pads_fall_back():
    """Negative pads (a crop; onnxruntime rejects them) are left to the strided-window path."""
    x, w = f32(1, 3, 10, 10), f32(4, 3, 3, 3)
    assert not padded_rows.padded_rows_fit(x, w, None, (1, 1), (1, 1), (-1, 0), (1, 1))
    assert padded_rows.padded_rows_fit(x, w, None, (1, 1), (1, 1), (0, 0), (1, 1))


def test_mixed_dtypes_fall_back():
    x, w = f32(1, 3, 10, 10), f32(4, 3, 3, 3)
    assert not padded_rows.padded_rows_fit(x, w.astype(np.float64), None, (1, 1), (1, 1), (1, 1), (1, 1))
    assert not padded_rows.padded_rows_fit(x.astype(np.float16), w.astype(np.float16), None,
                                           (1, 1), (1, 1), (1, 1), (1, 1))


def _session(model: onnx.ModelProto) -> onnxplug.InferenceSession:
    return onnxplug.InferenceSession(model.SerializeToString(), kernels_only(), providers=["numpy"])


def _ort(model: onnx.ModelProto) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _conv_model(x_shape, w, b, pads) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=pads)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def test_kept_scratch_serves_new_inputs_and_other_shapes(padded_rows_calls):
    """Scratch is kept per shape between calls: later inputs of a shape, calls of other shapes in
    between, and a batch size change give onnxruntime's results (no stale image or padding)."""
    w, b = f32(8, 4, 3, 3), f32(8)
    model = _conv_model(["n", 4, "h", "w"], w, b, [1, 1, 1, 1])
    ours, oracle = _session(model), _ort(model)
    for shape in [(1, 4, 16, 16), (1, 4, 16, 16), (2, 4, 12, 20), (1, 4, 16, 16), (2, 4, 12, 20), (3, 4, 16, 16)]:
        x = f32(*shape) * 10
        assert_same(ours.run(None, {"x": x})[0], oracle.run(None, {"x": x})[0], 1e-4, 1e-4, str(shape))
    assert len(padded_rows_calls) == 6


def test_poisoned_kept_scratch_never_reaches_outputs(monkeypatch, padded_rows_calls):
    """Everything in the kept scratch that a call writes (image interior, columns but the ones row,
    product) is filled with NaN before each call: outputs still match, so no call reads a previous
    call's values; only the zero borders and the ones row are relied on."""
    real = padded_rows.padded_rows_scratch

    def poisoned(*args):
        scratch = real(*args)
        if scratch is not None:
            scratch.interior.fill(np.nan)
            scratch.taps.fill(np.nan)
            scratch.product.fill(np.nan)
        return scratch

    monkeypatch.setattr(padded_rows, "padded_rows_scratch", poisoned)
    for bias in (False, True):
        for _ in range(2):
            feeds = {"x": f32(2, 6, 14, 18), "w": f32(4, 3, 3, 3)}
            if bias:
                feeds["b"] = f32(4)
            assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, group=2, pads=[1, 2, 0, 1])
    assert len(padded_rows_calls) == 4


def test_non_finite_inputs_stay_in_their_own_outputs(padded_rows_calls):
    """The product also computes the padded rows' extra columns from reads that wrap into the next
    row: an inf or NaN at a row's end must reach only the outputs onnxruntime puts it in."""
    x = f32(1, 4, 10, 12)
    x[0, 0, 3, -1] = np.inf
    x[0, 1, 5, 0] = -np.inf
    x[0, 2, 7, -1] = np.nan
    feeds = {"x": x, "w": np.abs(f32(5, 4, 3, 3)) + 0.1, "b": f32(5)}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, pads=[1, 1, 1, 1])
    assert padded_rows_calls


def test_threads_share_a_kernel_with_their_own_scratch(padded_rows_calls):
    """One session run from four threads at once on different inputs of one shape: each thread's
    result matches onnxruntime (scratch is per thread)."""
    w, b = f32(16, 16, 3, 3), f32(16)
    model = _conv_model(["n", 16, 32, 32], w, b, [1, 1, 1, 1])
    ours, oracle = _session(model), _ort(model)
    inputs = [f32(2, 16, 32, 32) for _ in range(4)]
    expected = [oracle.run(None, {"x": x})[0] for x in inputs]
    failures: list[str] = []

    def work(i: int) -> None:
        for _ in range(20):
            got = ours.run(None, {"x": inputs[i]})[0]
            if not np.allclose(got, expected[i], rtol=1e-4, atol=1e-4):
                failures.append(f"thread {i}")
                return

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert len(padded_rows_calls) == 80


# --- FusedConv: residual and activation, on the padded-rows path and the others ---------------

ACTIVATIONS = [("Relu", [], "Relu", {}), ("", [], None, {}), ("LeakyRelu", [0.2], "LeakyRelu", {"alpha": 0.2}),
               ("Sigmoid", [], "Sigmoid", {}), ("Tanh", [], "Tanh", {}),
               ("HardSigmoid", [0.3, 0.4], "HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
               ("Clip", [-0.5, 0.7], "Clip", {})]


def _fused_models(xs, ws, residual, bias, activation, params, onnx_op, onnx_attrs, conv_attrs):
    """A FusedConv node (run by onnxplug) and the same computation in ai.onnx ops (run by onnxruntime)."""
    m = ws[0]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs),
              helper.make_tensor_value_info("w", TensorProto.FLOAT, ws)]
    names = ["x", "w", "b" if bias else ""]
    if bias:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, [m]))
    if residual:
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
        names.append("z")
    while names[-1] == "":
        names.pop()
    out = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    fused = helper.make_node("FusedConv", names, ["y"], domain="com.onnxplug", activation=activation,
                             **conv_attrs)
    if params:
        fused.attribute.append(helper.make_attribute("activation_params", params))
    ours = helper.make_model(helper.make_graph([fused], "fused", inputs, out),
                             opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.onnxplug", 1)],
                             ir_version=10)
    nodes = [helper.make_node("Conv", names[:3] if bias else names[:2], ["c"], **conv_attrs)]
    last = "c"
    if residual:
        nodes.append(helper.make_node("Add", ["c", "z"], ["s"]))
        last = "s"
    extra_inputs = []
    if onnx_op == "Clip":
        extra_inputs = ["lo", "hi"]
    if onnx_op is not None:
        nodes.append(helper.make_node(onnx_op, [last, *extra_inputs], ["y"], **onnx_attrs))
    else:
        nodes.append(helper.make_node("Identity", [last], ["y"]))
    inits = []
    if onnx_op == "Clip":
        inits = [onnx.numpy_helper.from_array(np.array(params[0], np.float32), "lo"),
                 onnx.numpy_helper.from_array(np.array(params[1], np.float32), "hi")]
    oracle = helper.make_model(helper.make_graph(nodes, "plain", inputs, out, inits),
                               opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    return ours, oracle


FUSED_GEOMETRIES = [
    ("padded rows", (2, 6, 16, 20), (8, 6, 3, 3), dict(pads=[1, 1, 1, 1]), True),
    ("padded rows grouped dilated", (1, 6, 18, 20), (4, 3, 3, 3), dict(group=2, dilations=[2, 2], pads=[2, 2, 2, 2]),
     True),
    ("strided window", (2, 6, 16, 20), (8, 6, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1]), False),
    ("1x1", (2, 6, 10, 10), (8, 6, 1, 1), {}, False),
    ("depthwise", (1, 6, 12, 12), (6, 1, 3, 3), dict(group=6, pads=[1, 1, 1, 1]), False),
]


@pytest.mark.parametrize("activation,params,onnx_op,onnx_attrs", ACTIVATIONS, ids=[a[0] or "none" for a in ACTIVATIONS])
@pytest.mark.parametrize("residual", [False, True], ids=["no residual", "residual"])
@pytest.mark.parametrize("geometry", FUSED_GEOMETRIES, ids=[g[0] for g in FUSED_GEOMETRIES])
def test_fused_conv_matches_onnxruntime(padded_rows_calls, activation, params, onnx_op, onnx_attrs, residual,
                                        geometry):
    _, xs, ws, conv_attrs, rows = geometry
    ours_model, oracle_model = _fused_models(xs, ws, residual, True, activation, params, onnx_op, onnx_attrs,
                                             conv_attrs)
    feeds = {"x": f32(*xs) * 2, "w": f32(*ws), "b": f32(ws[0])}
    expected_shape = _ort(oracle_model).run(None, {**feeds, "z": np.zeros(1, np.float32)} if residual else feeds)[0].shape
    if residual:
        feeds["z"] = f32(*expected_shape)
    expected = _ort(oracle_model).run(None, feeds)[0]
    got = _session(ours_model).run(None, feeds)[0]
    assert_same(got, expected, 1e-4, 1e-5, f"FusedConv {activation}")
    assert bool(padded_rows_calls) == rows


def test_fused_conv_without_bias_on_padded_rows(padded_rows_calls):
    ours_model, oracle_model = _fused_models((1, 4, 12, 16), (6, 4, 3, 3), True, False, "Relu", [], "Relu", {},
                                             dict(pads=[1, 1, 1, 1]))
    feeds = {"x": f32(1, 4, 12, 16), "w": f32(6, 4, 3, 3), "z": f32(1, 6, 12, 16)}
    assert_same(_session(ours_model).run(None, feeds)[0], _ort(oracle_model).run(None, feeds)[0], 1e-4, 1e-5)
    assert padded_rows_calls


def test_relu_keeps_nan_and_gives_zero_for_negatives():
    """The Relu against an array of zeros: NaN stays NaN (as onnxruntime's Relu), -inf and -0.0
    become zeros, on a non-contiguous view too."""
    from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_conv import ResidualActivation

    y = np.array([[1.5, -2.0, np.nan, -np.inf, np.inf, -0.0, 0.0, 3.0]] * 3, np.float32)
    expected = _ort(helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "r", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), opset_imports=[helper.make_opsetid("", 17)],
        ir_version=10)).run(None, {"x": y})[0]
    full = y.copy()
    ResidualActivation(None, "Relu", [])(full, (slice(None),))
    np.testing.assert_array_equal(full, expected)
    band = y.copy()
    ResidualActivation(None, "Relu", [])(band[:, 2:6], (slice(None),))
    np.testing.assert_array_equal(band[:, 2:6], expected[:, 2:6])
    np.testing.assert_array_equal(band[:, :2], y[:, :2])
    out = np.empty_like(y)
    ResidualActivation(None, "Relu", []).copy_out(y, out, (slice(None),))
    np.testing.assert_array_equal(out, expected)


def test_zeros_operand_is_read_only_zeros_of_any_size():
    small = dispatch.zeros_operand((2, 3), np.dtype(np.float32))
    big = dispatch.zeros_operand((70, 100), np.dtype(np.float32))
    assert small.shape == (2, 3) and big.shape == (70, 100) and big.dtype == np.float32
    assert not big.any() and not small.any() and big.flags.c_contiguous
    with pytest.raises(ValueError):
        big[0, 0] = 1


def test_conv_attributes_are_resolved_per_input_shape():
    """SAME padding depends on the input size: a session fed two sizes gets onnxruntime's result
    for each, including after the first size comes back."""
    w, b = f32(4, 3, 4, 4), f32(4)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    ours, oracle = _session(model), _ort(model)
    for shape in [(1, 3, 11, 13), (2, 3, 16, 9), (1, 3, 11, 13)]:
        x = f32(*shape)
        assert_same(ours.run(None, {"x": x})[0], oracle.run(None, {"x": x})[0], 1e-4, 1e-4, str(shape))


# --- weights with the bias column, kept for constant initializers -------------------------------

def test_biased_weights_are_the_weights_and_bias_side_by_side_and_kept_only_when_constant():
    w, b = f32(6, 2, 3, 3), f32(6)
    expected = np.stack([np.hstack([w[g * 3:g * 3 + 3].reshape(3, 18), b[g * 3:g * 3 + 3, None]]) for g in range(2)])
    kept = dispatch.BiasedWeights(constant=True)
    first = kept.get(w, b, 2)
    np.testing.assert_array_equal(first, expected)
    assert kept.holds(w, b, 2) and kept.get(w, b, 2) is first
    assert not kept.holds(w.copy(), b, 2) and not kept.holds(w, b, 1)
    np.testing.assert_array_equal(kept.get(w, b, 1), np.hstack([w.reshape(6, 18), b[:, None]])[None])
    rebuilt = dispatch.BiasedWeights(constant=False)
    assert rebuilt.get(w, b, 2) is not rebuilt.get(w, b, 2) and not rebuilt.holds(w, b, 2)


@pytest.mark.parametrize("shape", [(1, 4, 12, 16), (1, 4, 12, 12)], ids=["padded rows", "strided window"])
def test_weights_fed_as_inputs_are_read_every_run(shape):
    """W and B fed by the caller (not constants) may change between runs, even in place in the same
    array: every run uses the values given (the weights with the bias column are not kept)."""
    strides = [1, 1] if shape[3] == 16 else [2, 2]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], strides=strides)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [5, 4, 3, 3]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    ours, oracle = _session(model), _ort(model)
    x, w, b = f32(*shape), f32(5, 4, 3, 3), f32(5)
    for _ in range(3):
        feeds = {"x": x, "w": w, "b": b}
        assert_same(ours.run(None, feeds)[0], oracle.run(None, feeds)[0], 1e-4, 1e-4)
        w *= -2.0  # in place: the same array objects next run
        b += 1.0


def test_constant_inputs_are_initializers_feeds_cannot_override():
    from types import SimpleNamespace

    context = SimpleNamespace(constants={"w": 1, "b": 2})
    assert dispatch.constant_inputs(SimpleNamespace(inputs=["x", "w", "b"]), context, (1, 2))
    # no bias, or an empty name for it: the weights alone decide
    assert dispatch.constant_inputs(SimpleNamespace(inputs=["x", "w"]), context, (1, 2))
    assert dispatch.constant_inputs(SimpleNamespace(inputs=["x", "w", ""]), context, (1, 2))
    assert not dispatch.constant_inputs(SimpleNamespace(inputs=["x", "w", "fed"]), context, (1, 2))
    assert not dispatch.constant_inputs(SimpleNamespace(inputs=["x", "fed"]), context, (1, 2))
    assert not dispatch.constant_inputs(SimpleNamespace(inputs=["x", "fed", "b"]), context, (1, 2))


# --- 1x1 convolutions: the bias in the product under a copy of the input --------------------------

ONE_BY_ONE = [
    ("expand", (1, 8, 12, 12), (24, 8, 1, 1), {}, None, True),
    ("expand batch 3 on product threads", (3, 8, 12, 12), (24, 8, 1, 1), {},
     {"split_product_macs": "1000"}, True),
    ("strided, more inputs than outputs", (2, 16, 13, 14), (8, 16, 1, 1), dict(strides=[2, 2]), None, True),
    ("strided on product threads", (3, 16, 13, 14), (8, 16, 1, 1), dict(strides=[2, 1]),
     {"split_product_macs": "1000"}, True),
    ("grouped expand", (2, 6, 9, 11), (12, 2, 1, 1), dict(group=3), None, True),
    ("padded", (1, 4, 6, 7), (8, 4, 1, 1), dict(pads=[1, 0, 2, 1]), None, True),
    ("projection: bias added after", (2, 24, 10, 10), (8, 24, 1, 1), {}, None, False),
    ("switched off", (1, 8, 12, 12), (24, 8, 1, 1), {}, {"im2col_bias_row": "0"},
     False),
]


@pytest.mark.parametrize("name,xs,ws,attrs,options,folded", ONE_BY_ONE, ids=[c[0] for c in ONE_BY_ONE])
def test_one_by_one_conv_with_bias_matches_onnxruntime(monkeypatch, name, xs, ws, attrs, options, folded):
    made = []
    real = dispatch._ones_row_columns
    monkeypatch.setattr(dispatch, "_ones_row_columns", lambda *a: made.append(a) or real(*a))
    for _ in range(2):  # the second run reuses the kept columns
        feeds = {"x": f32(*xs), "w": f32(*ws), "b": f32(ws[0])}
        assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, provider_options=options, **attrs)
    assert bool(made) == folded


@pytest.mark.parametrize("activation,params,onnx_op,onnx_attrs", ACTIVATIONS[:3], ids=[a[0] or "none" for a in ACTIVATIONS[:3]])
def test_fused_one_by_one_conv_with_bias_row_residual_and_activation(activation, params, onnx_op, onnx_attrs):
    ours_model, oracle_model = _fused_models((2, 4, 10, 12), (12, 4, 1, 1), True, True, activation, params, onnx_op,
                                             onnx_attrs, {})
    feeds = {"x": f32(2, 4, 10, 12), "w": f32(12, 4, 1, 1), "b": f32(12), "z": f32(2, 12, 10, 12)}
    assert_same(_session(ours_model).run(None, feeds)[0], _ort(oracle_model).run(None, feeds)[0], 1e-4, 1e-5)


@pytest.mark.parametrize("geometry", FUSED_GEOMETRIES[:3], ids=[g[0] for g in FUSED_GEOMETRIES[:3]])
def test_fused_conv_broadcasts_a_smaller_residual(geometry):
    """A residual of shape (1, M, 1, 1) is broadcast to the output (as the Add it replaces)."""
    _, xs, ws, conv_attrs, _ = geometry
    ours_model, oracle_model = _fused_models(xs, ws, True, True, "Relu", [], "Relu", {}, conv_attrs)
    feeds = {"x": f32(*xs), "w": f32(*ws), "b": f32(ws[0]), "z": f32(1, ws[0], 1, 1)}
    assert_same(_session(ours_model).run(None, feeds)[0], _ort(oracle_model).run(None, feeds)[0], 1e-4, 1e-5)


def test_kept_scratch_stays_within_its_budgets(monkeypatch):
    """Per thread, kept scratch is dropped (and made again on use) rather than grow past the byte
    budget or the shape count; results stay onnxruntime's."""
    monkeypatch.setattr(scratch, "SCRATCH_KEEP_TOTAL_BYTES", 200 << 10)
    monkeypatch.setattr(padded_rows, "_SCRATCH", threading.local())
    for size in range(10, 30):
        feeds = {"x": f32(1, 8, size, size), "w": f32(8, 8, 3, 3), "b": f32(8)}
        assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, pads=[1, 1, 1, 1])
        kept = padded_rows._SCRATCH.kept
        assert kept[None] <= 200 << 10 and len(kept) <= scratch.KEEP_SHAPES + 1
        assert kept[None] == sum(v.nbytes for k, v in kept.items() if k is not None and v is not None)


def test_padded_rows_read_non_contiguous_inputs(padded_rows_calls):
    """An input that is a strided view (as another kernel may return) is read as its values."""
    base = f32(2, 6, 18, 40)
    x = base[:, ::2, :, 3:35]  # (2, 3, 18, 32), strided
    w, b = f32(5, 3, 3, 3), f32(5)
    model = _conv_model([2, 3, 18, 32], w, b, [1, 1, 1, 1])
    expected = _ort(model).run(None, {"x": np.ascontiguousarray(x)})[0]
    got = dispatch.conv_nd(x, w, b, (1, 1), (1, 1), (1, 1), (1, 1), 1)
    assert_same(got, expected, 1e-4, 1e-4)
    assert padded_rows_calls


@pytest.mark.skipif(threaded_blas() is None, reason="no threaded BLAS")
@pytest.mark.parametrize("bias", [False, True])
def test_batch_wide_product_for_the_threaded_blas(monkeypatch, padded_rows_calls, bias):
    """A batch whose product is large enough for the threaded BLAS gets columns with the images
    side by side and one product; poisoned scratch, every image and the bias still match
    onnxruntime, and the threaded BLAS made the product."""
    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    threaded = threaded_blas()
    products: list[tuple] = []
    real_gemm = type(threaded).gemm
    monkeypatch.setattr(type(threaded), "gemm", lambda self, a, b, out=None: products.append(b.shape)
                        or real_gemm(self, a, b, out))
    real = padded_rows.padded_rows_scratch
    layouts: list[bool] = []

    def poisoned(*args):
        scratch = real(*args)
        layouts.append(scratch.wide)
        scratch.interior.fill(np.nan)
        scratch.taps.fill(np.nan)
        scratch.product.fill(np.nan)
        return scratch

    monkeypatch.setattr(padded_rows, "padded_rows_scratch", poisoned)
    feeds = {"x": f32(3, 5, 12, 14) * 4, "w": f32(7, 5, 3, 3)}
    if bias:
        feeds["b"] = f32(7)
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, pads=[1, 0, 1, 2],
                          provider_options={"threaded_product_macs": "100000"})
    assert layouts == [True] and padded_rows_calls
    taps = 5 * 9 + bias
    assert products == [(taps, 3 * 12 * 16)]  # (taps [+ ones], images x padded-width rows)
