"""`onnxplug diff` finds the node where a perturbed kernel parts from a correct one, and nothing
between correct runtimes; `run --dump` writes every intermediate with its manifest."""

from __future__ import annotations

import json
from typing import ClassVar

import numpy as np
import onnx
import onnxplug as ort
import pytest
from onnxplug.cli import main
from onnxplug.intermediates import capture, diff, dump
from onnxplug.kernel import Kernel, KernelRegistry
from onnxplug.plugins import get_catalog
from onnxplug.provider import ExecutionProvider
from onnxplug.testing.model_suite import build, sample_inputs

PERTURBATION = 0.5
REGISTRY = KernelRegistry("perturbed")


@REGISTRY.kernel("Relu", 6, 13, 14)
class PerturbedRelu(Kernel):
    """Relu, off by PERTURBATION in its first element: a bug diff must find."""

    def compute(self, x):
        y = np.maximum(x, 0)
        y.flat[0] += PERTURBATION
        return y


class PerturbedProvider(ExecutionProvider):
    name: ClassVar[str] = "perturbed"
    version: ClassVar[str] = "test"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = REGISTRY


@pytest.fixture(scope="module", autouse=True)
def registered():
    get_catalog().register(PerturbedProvider, "tests")
    yield
    get_catalog().providers.pop("perturbed", None)


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "resnet18.onnx"
    onnx.save(build("resnet18"), path)
    return str(path)


def _options():
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    return options


def test_diff_finds_the_perturbed_kernel_at_its_node(resnet18):
    feeds = sample_inputs("resnet18")
    order = capture(ort.InferenceSession(resnet18, _options(), providers=["numpy"]), feeds)
    first_relu = next(c for c in order if c.op_type == "Relu")
    its_input = next(n for n in build("resnet18").graph.node if n.name == first_relu.node).input[0]
    input_shape = list(next(c for c in order if c.name == its_input).value.shape)
    for sides in (("perturbed", "numpy"), ("perturbed", "onnxruntime"), ("onnxruntime", "perturbed")):
        found, compared = diff(resnet18, sides, feeds)
        assert found is not None, sides
        assert (found.node, found.op_type) == (first_relu.node, "Relu")
        assert found.providers[0] == "perturbed"
        assert found.max_abs == pytest.approx(PERTURBATION, rel=1e-5)
        assert found.input_shapes == [input_shape]
        assert compared == [c.name for c in order].index(first_relu.name) + 1


def test_no_divergence_between_correct_runtimes(resnet18):
    found, compared = diff(resnet18, ("numpy", "onnxruntime"), sample_inputs("resnet18"))
    assert found is None and compared > 50


def test_no_divergence_between_numba_and_numpy():
    if "numba" not in ort.get_available_providers():
        pytest.skip("numba provider not installed")
    path = "gru.onnx"
    found, compared = diff(_save("gru", path), ("numba", "numpy"), sample_inputs("gru"))
    assert found is None and compared > 0


def _save(name, path):
    import tempfile
    from pathlib import Path

    target = Path(tempfile.mkdtemp()) / path
    onnx.save(build(name), target)
    return str(target)


def test_cli_diff_reports_the_node(resnet18, capsys):
    assert main(["diff", resnet18, "--providers", "perturbed,numpy"]) == 2
    out = capsys.readouterr().out
    assert "first divergence: value " in out and "(Relu)" in out
    assert "providers: perturbed vs numpy" in out and "max abs error 0.5" in out
    assert main(["diff", resnet18, "--providers", "numpy,onnxruntime"]) == 0
    assert "no divergence" in capsys.readouterr().out


def test_dump_writes_every_intermediate_with_a_manifest(tmp_path, resnet18, capsys):
    feeds = sample_inputs("resnet18")
    sess = ort.InferenceSession(resnet18, _options(), providers=["perturbed"])
    manifest = json.loads(open(dump(sess, feeds, str(tmp_path / "api"))).read())
    assert len(manifest) == len(build("resnet18").graph.node)  # one output per node, unoptimised
    relu = next(e for e in manifest if e["op"] == "Relu")
    value = np.load(tmp_path / "api" / relu["file"])
    assert relu["provider"] == "perturbed" and relu["shape"] == list(value.shape) and relu["dtype"] == "float32"
    assert {e["provider"] for e in manifest} == {"perturbed", "numpy"}
    out_dir = tmp_path / "cli"
    assert main(["run", resnet18, "--provider", "numpy", "--dump", str(out_dir), "--repeat", "0"]) == 0
    entries = json.loads((out_dir / "manifest.json").read_text())
    assert entries and all((out_dir / e["file"]).exists() for e in entries)
    assert set(entries[0]) == {"value", "file", "node", "op", "provider", "shape", "dtype"}
