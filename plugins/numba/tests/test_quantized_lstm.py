"""com.microsoft DynamicQuantizeLSTM on the numba provider against onnxruntime: directions,
initial states, bias, peepholes, per-direction and per-column scales, int8 and uint8 weights,
batches split over thread counts as onnxruntime's, one step, a model from onnxruntime's
quantize_dynamic, and the attributes it leaves to the numpy provider; the products with AVX-512
VNNI (where the CPU has it) and without. The integer products are exact and the float steps are onnxruntime's, so outputs are
compared bit for bit."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxplug as ort
import pytest
from numba_test_helpers import run_numba
from onnx import TensorProto, helper, numpy_helper
from onnxplug_numba.kernels import vnni

OUTPUTS = ["y", "y_h", "y_c"]


def _model(rng, direction="bidirectional", steps=5, batch=3, inputs=6, hidden=4, w_type=np.int8, per_column=False,
           bias=True, states=True, peepholes=False, **attrs):  # type: ignore[no-untyped-def]
    """A one-node model (weights, scales and zero points as initializers, as the quantization
    tool writes them) and its feeds."""
    dirs = 2 if direction == "bidirectional" else 1
    params = (dirs, 4 * hidden) if per_column else (dirs,)
    info = np.iinfo(w_type)

    def q(shape):  # type: ignore[no-untyped-def]
        return rng.integers(info.min, info.max + 1, shape).astype(w_type)

    def zero_point():  # type: ignore[no-untyped-def]
        # onnxruntime takes one zero point per direction (0 for int8), and per-column ones must all
        # be one value
        if w_type == np.int8:
            return np.zeros(params, w_type)
        return np.full(params, q(()), w_type) if per_column else q(params)

    constants = {"w": q((dirs, inputs, 4 * hidden)), "r": q((dirs, hidden, 4 * hidden)),
                 "w_scale": rng.uniform(0.002, 0.01, params).astype(np.float32), "w_zp": zero_point(),
                 "r_scale": rng.uniform(0.002, 0.01, params).astype(np.float32), "r_zp": zero_point()}
    if bias:
        constants["b"] = rng.standard_normal((dirs, 8 * hidden)).astype(np.float32)
    feeds = {"x": rng.standard_normal((steps, batch, inputs)).astype(np.float32)}
    if states:
        feeds["h0"] = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
        feeds["c0"] = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
    if peepholes:
        feeds["p"] = rng.standard_normal((dirs, 3 * hidden)).astype(np.float32)
    names = ["x", "w", "r", "b" if bias else "", "", "h0" if states else "", "c0" if states else "",
             "p" if peepholes else "",
             "w_scale", "w_zp", "r_scale", "r_zp"]
    node = helper.make_node("DynamicQuantizeLSTM", names, OUTPUTS, domain="com.microsoft", hidden_size=hidden,
                            direction=direction, **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in OUTPUTS],
        [numpy_helper.from_array(v, k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    return model, feeds


@pytest.fixture(params=["vnni", "int16 pairs"])
def products(request, monkeypatch):  # type: ignore[no-untyped-def]
    """Kernels made in the test use VNNI products (skipped on CPUs without) or the portable ones."""
    if request.param == "vnni" and not vnni.AVAILABLE:
        pytest.skip("the CPU has no AVX-512 VNNI")
    monkeypatch.setattr(vnni, "AVAILABLE", request.param == "vnni")


def _onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray], threads: int) -> list[np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(model.SerializeToString(), options,
                                        providers=["CPUExecutionProvider"]).run(None, feeds)


def _assert_same(model: onnx.ModelProto, feeds: dict[str, np.ndarray], threads: int = 1) -> None:
    """Outputs of the numba kernel (no fallback) bitwise equal to onnxruntime's at ``threads``."""
    got, session = run_numba(model, feeds, threads=threads)
    assert [(a.op_type, a.provider) for a in session.get_node_assignments()] == [("DynamicQuantizeLSTM", "numba")]
    expected = _onnxruntime(model, feeds, threads)
    assert len(got) == 3
    for name, a, e in zip(OUTPUTS, got, expected):
        assert a.dtype == e.dtype and a.shape == e.shape, (name, a.dtype, a.shape, e.shape)
        np.testing.assert_array_equal(a, e, err_msg=name)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("w_type", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column", [False, True])
def test_directions_weight_types_and_scales(products, rng, direction, w_type, per_column):
    _assert_same(*_model(rng, direction, w_type=w_type, per_column=per_column))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("bias, states", [(False, False), (True, False), (False, True)])
def test_without_bias_or_initial_states(products, rng, direction, bias, states):
    _assert_same(*_model(rng, direction, bias=bias, states=states))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("bias, states", [(True, True), (False, True), (True, False)])
def test_peepholes(products, rng, direction, bias, states):
    """Peepholes i and f on the previous cell state, o on the new one, each before the bias."""
    _assert_same(*_model(rng, direction, batch=2, hidden=24, bias=bias, states=states, peepholes=True))


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("steps, batch", [(1, 1), (1, 4), (9, 1)])
def test_one_step_and_one_row(products, rng, direction, steps, batch):
    _assert_same(*_model(rng, direction, steps=steps, batch=batch, inputs=11, hidden=24))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("batch, hidden", [(3, 4), (7, 20), (6, 260), (2, 260), (4, 260)])
@pytest.mark.parametrize("threaded", [False, True])
def test_h_quantized_per_block_of_rows_as_onnxruntimes_threads(products, rng, monkeypatch, direction, threads, batch,
                                                                hidden, threaded):
    """onnxruntime splits the batch over its threads (more than 4 rows, or 2+ with hidden size 256
    or less) and quantizes each thread's rows of h apart: (6, 260) on 2 threads is two blocks of 3
    rows, (2, 260) and (4, 260) one block of the whole batch. The blocks and directions run on the
    calling thread (small products) or on the session's threads."""
    from onnxplug_numba.ops import op_quantized_lstm

    monkeypatch.setattr(op_quantized_lstm, "THREADED_MIN_MACS", 0 if threaded else 1 << 62)
    _assert_same(*_model(rng, direction, steps=4, batch=batch, inputs=9, hidden=hidden), threads=threads)


def test_large_hidden_and_input(products, rng):
    """Hidden 512 and input 512 as the OCR model of the ddddocr wheel: sums of 512 products."""
    _assert_same(*_model(rng, "bidirectional", steps=6, batch=1, inputs=512, hidden=512))


def test_weights_computed_by_the_graph(products, rng):
    """W and R from Identity nodes (not initializers): prepared again each run."""
    model, feeds = _model(rng, "bidirectional")
    graph = model.graph
    node = graph.node[0]
    for i, name in ((1, "w"), (2, "r")):
        graph.node.insert(0, helper.make_node("Identity", [name], [name + "_v"]))
        node.input[i] = name + "_v"
    got, session = run_numba(model, feeds, threads=1)
    assert {a.op_type: a.provider for a in session.get_node_assignments()}["DynamicQuantizeLSTM"] == "numba"
    for _ in range(2):
        got = session.run(None, feeds)
        for a, e in zip(got, _onnxruntime(model, feeds, 1)):
            np.testing.assert_array_equal(a, e)


def test_model_from_quantize_dynamic(rng, tmp_path):
    """A float LSTM quantized by onnxruntime.quantization.quantize_dynamic (per direction int8 weights)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    hidden, inputs = 16, 10
    values = {"w": rng.standard_normal((2, 4 * hidden, inputs)).astype(np.float32) * 0.3,
              "r": rng.standard_normal((2, 4 * hidden, hidden)).astype(np.float32) * 0.3,
              "b": rng.standard_normal((2, 8 * hidden)).astype(np.float32) * 0.1}
    node = helper.make_node("LSTM", ["x", "w", "r", "b"], OUTPUTS, hidden_size=hidden, direction="bidirectional")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7, 3, inputs])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in OUTPUTS],
                              [numpy_helper.from_array(v, k) for k, v in values.items()])
    source, target = tmp_path / "lstm.onnx", tmp_path / "lstm.quant.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8), source)
    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)
    model = onnx.load(str(target))
    assert [n.op_type for n in model.graph.node] == ["DynamicQuantizeLSTM"]
    _assert_same(model, {"x": rng.standard_normal((7, 3, inputs)).astype(np.float32)})


@pytest.mark.parametrize("attrs, extra, words", [
    ({"clip": 0.5}, {}, "clip"),
    ({"input_forget": 1}, {}, "input_forget"),
    ({"activations": ["Sigmoid", "Relu", "Tanh"]}, {}, "activations"),
    ({}, {"lens": 4}, "sequence_lens"),
])
def test_declined_attributes_are_named_and_left_to_numpy(rng, attrs, extra, words):
    from onnxplug.ir.loader import load_model
    from onnxplug_numba.ops.op_quantized_lstm import DynamicQuantizeLSTM
    from onnxplug_sdk import GraphView

    model, feeds = _model(rng, "forward", **attrs)
    node = model.graph.node[0]
    if "lens" in extra:
        node.input[4] = "lens"
        feeds["lens"] = np.array([5, 5, 5], np.int32)
        model.graph.input.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [3]))
    graph = load_model(model.SerializeToString()).graph
    decline = DynamicQuantizeLSTM.supports(graph.nodes[0], GraphView(graph, list(graph.nodes)))
    assert not decline and words in str(decline)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["numba"])
    assert [a.provider for a in session.get_node_assignments()] == ["numpy"]
    for a, e in zip(session.run(None, feeds), _onnxruntime(model, feeds, 1)):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(not vnni.AVAILABLE, reason="the CPU has no AVX-512 VNNI")
@pytest.mark.parametrize("rows", [1, 3, 4, 9])
@pytest.mark.parametrize("k, n", [(1, 1), (3, 64), (13, 70), (64, 200), (515, 130)])
def test_vnni_product_pads_rows_and_columns(rng, rows, k, n):
    """uint8 x int8 sums of any K and N (packing pads both) and rows in fours and ones, against
    numpy's int64 product."""
    from numba import njit

    @njit
    def product(q, packed, acc):  # type: ignore[no-untyped-def]
        vnni.product(q, packed, acc)

    s = rng.integers(-128, 128, (k, n)).astype(np.int8)
    packed, colsum = vnni.pack(s)
    q = np.zeros((rows, packed.shape[1] * 4), np.uint8)
    q[:, :k] = rng.integers(0, 256, (rows, k))
    acc = np.full((rows, colsum.size), 7, np.int32)
    product(q, packed, acc)
    np.testing.assert_array_equal(acc[:, :n], q[:, :k].astype(np.int64) @ s.astype(np.int64))
    np.testing.assert_array_equal(acc[:, n:], 0)
    np.testing.assert_array_equal(colsum[:n], s.sum(axis=0))


def test_weights_not_fitting_the_attributes_are_an_error(rng):
    """Two directions of weights on a forward node, as onnxruntime, fail the run."""
    from onnxplug.capi import onnxruntime_pybind11_state
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

    model, feeds = _model(rng, "bidirectional")
    attr = next(a for a in model.graph.node[0].attribute if a.name == "direction")
    attr.s = b"forward"
    with pytest.raises(InvalidArgument, match="Input W must have shape"):
        _onnxruntime(model, feeds, 1)
    with pytest.raises(onnxruntime_pybind11_state.Fail, match="do not fit"):
        run_numba(model, feeds, threads=1)


@pytest.mark.parametrize("outputs", [["", "y_h", "y_c"], ["y"], ["y", "y_h"]])
def test_outputs_left_out(products, rng, outputs):
    model, feeds = _model(rng, "bidirectional")
    node = model.graph.node[0]
    del node.output[:]
    node.output.extend(outputs)
    del model.graph.output[:]
    model.graph.output.extend([helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o])
    got, _ = run_numba(model, feeds, threads=1)
    expected = _onnxruntime(model, feeds, 1)
    assert len(got) == len(expected)
    for a, e in zip(got, expected):
        np.testing.assert_array_equal(a, e)
