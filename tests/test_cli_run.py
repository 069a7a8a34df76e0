"""`onnxplug run`: the assignment summary, outputs and latency it prints, given inputs, one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnxplug.cli import main
from onnxplug.errors import OnnxplugError


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    """y = Relu(x + 1) on x [n, 4] float32, and an int64 shape output."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["s"], name="add"), helper.make_node("Relu", ["s"], ["y"], name="relu"),
         helper.make_node("Shape", ["x"], ["shape"], name="shape")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    path = tmp_path / "add_relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def test_run_prints_assignments_outputs_and_latency(model_path, capsys):
    assert main(["run", str(model_path), "--provider", "numpy", "--dim", "n=3", "--repeat", "2"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == f"model: {model_path}"
    assert lines[1] == "assignment: numpy=3 node(s)"
    assert "output y: shape [3, 4], dtype float32" in lines
    assert "output shape: shape [2], dtype int64" in lines
    assert lines[-1].startswith("latency: session creation ") and "median of 2 runs" in lines[-1]
    assert "first run" in err  # said on stderr before a possibly long compile


def test_run_feeds_a_given_input_and_saves_outputs(model_path, tmp_path, capsys):
    x = np.array([[-3, -1, 0, 2], [5, -7, 1, 1]], np.float32)
    np.save(tmp_path / "x.npy", x)
    saved = tmp_path / "out.npz"
    assert main(["run", str(model_path), "--input", f"x={tmp_path / 'x.npy'}", "--save-outputs", str(saved)]) == 0
    assert "output y: shape [2, 4], dtype float32" in capsys.readouterr().out
    with np.load(saved) as outputs:
        np.testing.assert_array_equal(outputs["y"], np.maximum(x + 1, 0))
        np.testing.assert_array_equal(outputs["shape"], [2, 4])


@pytest.mark.parametrize("argv, culprit", [
    (["run", "{missing}"], "missing.onnx"),
    (["run", "{model}", "--input", "x"], "--input 'x'"),
    (["run", "{model}", "--input", "x={missing}"], "cannot read"),
    (["run", "{model}", "--provider", "no-such-provider"], "no-such-provider"),
])
def test_errors_are_one_line_naming_the_culprit(model_path, tmp_path, capsys, argv, culprit):
    argv = [a.format(model=model_path, missing=tmp_path / "missing.onnx") for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("onnxplug: error: ") and culprit in err[-1]
    assert not any("Traceback" in line for line in err)


def test_debug_shows_the_exception(model_path):
    with pytest.raises(OnnxplugError, match="--input 'x'"):
        main(["--debug", "run", str(model_path), "--input", "x"])
