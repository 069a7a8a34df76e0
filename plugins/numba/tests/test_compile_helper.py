"""The compile helper: its kernel signatures are the ones the conv engine calls, and on an empty
cache a CNN's first run uses kernels a helper process compiled, with onnxruntime's results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from numba_test_helpers import run_numba, run_onnxruntime, assert_close

from onnxplug_numba import compile_helper


def _conv_model(path_cases: list[tuple[tuple[int, ...], tuple[int, ...], dict]]) -> tuple[onnx.ModelProto, dict]:
    """Independent convs, one per (input shape, weight shape, attributes), each with its own input."""
    rng = np.random.default_rng(0)
    nodes, inputs, outputs, inits, feeds = [], [], [], [], {}
    for k, (xs, ws, attrs) in enumerate(path_cases):
        nodes.append(helper.make_node("Conv", [f"x{k}", f"w{k}", f"b{k}"], [f"y{k}"], **attrs))
        inputs.append(helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, list(xs)))
        outputs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None))
        inits += [numpy_helper.from_array(rng.standard_normal(ws).astype(np.float32) * 0.1, f"w{k}"),
                  numpy_helper.from_array(rng.standard_normal(ws[0]).astype(np.float32), f"b{k}")]
        feeds[f"x{k}"] = rng.standard_normal(xs).astype(np.float32)
    graph = helper.make_graph(nodes, "convs", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), feeds


#: One conv per compiled kernel of the engine (2 threads, float32, sizes past the prange threshold).
PATHS = [
    ((1, 16, 64, 64), (32, 16, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),        # im2col_conv
    ((2, 16, 64, 64), (32, 16, 3, 3), {"pads": [1, 1, 1, 1]}),                           # tap_conv
    ((2, 16, 64, 64), (32, 8, 3, 3), {"pads": [1, 1, 1, 1], "group": 2}),                # pitched_conv
    ((1, 128, 14, 14), (128, 128, 3, 3), {"pads": [1, 1, 1, 1]}),                       # channel_split_conv
    ((2, 64, 56, 56), (64, 1, 3, 3), {"pads": [1, 1, 1, 1], "group": 64}),              # depthwise_conv
    ((2, 64, 56, 56), (64, 64, 1, 1), {}),                                              # pointwise_conv
    ((1, 256, 28, 28), (256, 256, 1, 1), {}),                                           # pointwise_channel_split
]


def test_signatures_are_the_ones_the_conv_engine_calls() -> None:
    model, feeds = _conv_model(PATHS)
    got, _ = run_numba(model, feeds, threads=2)
    assert_close(got, run_onnxruntime(model, feeds), rtol=1e-3, atol=1e-4)
    for name in compile_helper.KERNELS:
        disp = compile_helper.dispatcher(name)
        assert compile_helper.signature(name) in disp.signatures, (name, disp.signatures)


@pytest.mark.parametrize("w_shape, attrs, likely", [
    ((64, 3, 7, 7), {"strides": (2, 2), "pads": (3, 3, 3, 3)}, "im2col_conv"),
    ((64, 64, 3, 3), {"pads": (1, 1, 1, 1)}, "tap_conv"),
    ((64, 1, 3, 3), {"group": 64}, "depthwise_conv"),
    ((128, 64, 1, 1), {}, "pointwise_conv"),
])
def test_likely_kernels_follow_the_weight(w_shape: tuple, attrs: dict, likely: str) -> None:
    from onnxplug_numba.ops._conv import ConvSpec, likely_kernels

    spec = ConvSpec(attrs.get("group", 1), attrs.get("strides", (1, 1)), (1, 1), attrs.get("pads"), "NOTSET")
    first, _ = likely_kernels(w_shape, spec)
    assert first == [likely]


CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np, onnx
    import onnxplug
    from onnxplug_numba import compile_helper
    model = onnx.load(sys.argv[1])
    feeds = dict(np.load(sys.argv[2]))
    so = onnxplug.SessionOptions(); so.intra_op_num_threads = 2
    s = onnxplug.InferenceSession(model.SerializeToString(), so,
                                  providers=[("numba", {"compile_helper": sys.argv[3]})])
    out = s.run(None, feeds)
    np.savez(sys.argv[4], *out)
    h = compile_helper._helper
    print(json.dumps(None if h is None else h.state))
""")


@pytest.mark.skipif(not compile_helper.enabled(), reason="the compile helper needs a second CPU")
@pytest.mark.parametrize("option", ["1", "0"])
def test_cold_cache_first_run_with_and_without_helper(tmp_path, option: str) -> None:
    model, feeds = _conv_model(PATHS[:2])
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "feeds.npz", **feeds)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), ONNXPLUG_NUMBA_CACHE_DIR=str(tmp_path / "gen"))
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "m.onnx"), str(tmp_path / "feeds.npz"), option,
                           str(tmp_path / "out.npz")], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    state = json.loads(done.stdout.strip().splitlines()[-1])
    out = np.load(tmp_path / "out.npz")
    assert_close([out[f"arr_{i}"] for i in range(2)], run_onnxruntime(model, feeds), rtol=1e-3, atol=1e-4)
    if option == "0":
        assert state is None
        return
    # the two kernels the convs call were queued, and each was compiled by the helper or taken
    # over by the session's process before its first call (kernels queued as possible ones may
    # still be compiling)
    assert {state.get("im2col_conv"), state.get("tap_conv")} <= {"done", "taken"}
    assert "done" in state.values()
    # the helper's results are in the numba cache folder the session's process was given
    helper_done = [n for n, word in state.items() if word == "done"]
    written = {f.split("-")[0] for _, _, files in os.walk(tmp_path / "numba") for f in files if f.endswith(".nbi")}
    assert {".".join(compile_helper.KERNELS[n][:2]) for n in helper_done} <= written
