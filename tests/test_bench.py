"""`onnxplug bench`: the fields it prints and writes (never how fast anything is)."""

from __future__ import annotations

import json

import onnx
import pytest
from onnx import TensorProto, helper
from onnxplug.bench import benchmark, summary
from onnxplug.cli import main


@pytest.fixture
def model_path(tmp_path):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def test_bench_prints_and_writes_the_fields(model_path, tmp_path, capsys):
    out_json = tmp_path / "bench.json"
    assert main(["bench", str(model_path), "--provider", "numpy", "--runs", "3", "--warmup", "1",
                 "--batch", "8", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("runtime"))
    assert header.split() == ["runtime", "runs", "median", "ms", "p90", "ms", "min", "ms", "samples/s"]
    row = next(line for line in out.splitlines() if line.startswith("onnxplug [numpy]"))
    assert row.split()[2] == "3"
    assert "batch: 8" in out
    data = json.loads(out_json.read_text())
    result = data["results"]["onnxplug [numpy]"]
    assert data["batch"] == 8 and result["runs"] == 3
    assert set(result) == {"runs", "median_ms", "p90_ms", "min_ms", "mean_ms", "throughput_per_s"}
    assert result["min_ms"] <= result["median_ms"] <= result["p90_ms"]


def test_bench_compares_with_onnxruntime(model_path, capsys):
    assert main(["bench", str(model_path), "--provider", "numpy", "--runs", "2", "--warmup", "0",
                 "--compare", "onnxruntime"]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("onnxruntime [CPUExecutionProvider]") for line in out.splitlines())
    assert "median onnxplug [numpy] / onnxruntime [CPUExecutionProvider]: " in out


def test_alternating_blocks_count_every_run_and_skip_warmups():
    calls = {"a": 0, "b": 0}
    order = []

    def runner(name):
        def run():
            calls[name] += 1
            order.append(name)
        return run

    results = benchmark({"a": runner("a"), "b": runner("b")}, runs=5, warmup=2, batch=1, blocks=2, pause_s=0)
    assert calls == {"a": 7, "b": 7}
    assert order[4:] == ["a"] * 3 + ["b"] * 3 + ["a"] * 2 + ["b"] * 2
    assert results["a"]["runs"] == results["b"]["runs"] == 5


def test_summary_statistics():
    s = summary([0.001, 0.002, 0.003, 0.004], batch=4)
    assert s["median_ms"] == pytest.approx(2.5) and s["min_ms"] == pytest.approx(1.0)
    assert s["p90_ms"] == pytest.approx(3.7) and s["throughput_per_s"] == pytest.approx(1600)


def test_bench_refuses_zero_runs(model_path, capsys):
    assert main(["bench", str(model_path), "--runs", "0"]) == 1
    assert "--runs" in capsys.readouterr().err
