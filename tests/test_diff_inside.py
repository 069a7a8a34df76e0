"""`onnxplug diff` names the model's node behind a divergence that comes out of a fused step (run
again with fusion off) or out of a Loop (its body's values compared, iteration by iteration)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import onnx
import onnxplug as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxplug.cli import main
from onnxplug.intermediates import diff
from onnxplug.kernel import Kernel, KernelRegistry
from onnxplug.plugins import get_catalog
from onnxplug.provider import Capability, ExecutionProvider

PERTURBATION = 0.25
F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
REGISTRY = KernelRegistry("fusing_perturbed")


def _tanh(x: np.ndarray) -> np.ndarray:
    """Tanh, off by PERTURBATION wherever the first element of its input is above 1.5."""
    y = np.tanh(x)
    return y + np.float32(PERTURBATION) if x.flat[0] > 1.5 else y


FUNCTIONS = {"Mul": np.multiply, "Add": np.add, "Tanh": _tanh}


@REGISTRY.kernel("Tanh", 6, 13)
class PerturbedTanh(Kernel):
    def compute(self, x):
        return _tanh(x)


@REGISTRY.kernel("Mul", 7, 13, 14)
@REGISTRY.kernel("Add", 7, 13, 14)
class Binary(Kernel):
    def compute(self, a, b):
        return FUNCTIONS[self.node.op_type](a, b)


class Chain(Kernel):
    """A fused Mul/Add/Tanh chain, node by node."""

    def __init__(self, subgraph, context) -> None:
        super().__init__(subgraph.nodes[0], context)
        self.subgraph = subgraph

    def compute(self, *inputs):
        values = dict(zip(self.subgraph.inputs, inputs))
        for node in self.subgraph.nodes:
            values[node.outputs[0]] = FUNCTIONS[node.op_type](*(values[i] for i in node.inputs))
        return tuple(values[o] for o in self.subgraph.outputs)


class FusingPerturbedProvider(ExecutionProvider):
    """Fuses its Mul/Add/Tanh nodes into one step when there are two or more (option ``fuse``)."""

    name: ClassVar[str] = "fusing_perturbed"
    version: ClassVar[str] = "test"
    default_options: ClassVar[dict] = {"fuse": True}

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = REGISTRY

    def get_capability(self, view):
        mine = [n for n in view.nodes if n.op_type in FUNCTIONS and not n.subgraphs]
        if self.options["fuse"] and len(mine) >= 2:
            return [Capability(tuple(mine), fused=True, name="fused_chain")]
        return super().get_capability(view)

    def compile(self, subgraph, context):
        return Chain(subgraph, context)


GEMM_REGISTRY = KernelRegistry("perturbed_gemm")


@GEMM_REGISTRY.kernel("MatMul", 1, 9, 13)
class PerturbedMatMul(Kernel):
    def compute(self, a, b):
        return a @ b + np.float32(PERTURBATION)


@GEMM_REGISTRY.kernel("FusedGemm", domain="com.onnxplug")
class PerturbedFusedGemm(Kernel):
    """The optimizer's MatMul + Add + Relu, off by PERTURBATION (as the MatMul it came from)."""

    def compute(self, a, b, c=None):
        return np.maximum(a @ b + np.float32(PERTURBATION) + (0 if c is None else c), 0)


class PerturbedGemmProvider(ExecutionProvider):
    name: ClassVar[str] = "perturbed_gemm"
    version: ClassVar[str] = "test"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = GEMM_REGISTRY


@pytest.fixture(scope="module", autouse=True)
def registered():
    for cls in (FusingPerturbedProvider, PerturbedGemmProvider):
        get_catalog().register(cls, "tests")
    yield
    for cls in (FusingPerturbedProvider, PerturbedGemmProvider):
        get_catalog().providers.pop(cls.name, None)


def _save(model, tmp_path) -> str:
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    return path


def _chain_model():
    """y = Relu(Tanh(x * k) + b): the provider fuses scale, squash and shift; Relu runs on numpy."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "k"], ["scaled"], name="scale"),
         helper.make_node("Tanh", ["scaled"], ["squashed"], name="squash"),
         helper.make_node("Add", ["squashed", "b"], ["shifted"], name="shift"),
         helper.make_node("Relu", ["shifted"], ["y"], name="out")],
        "g", [helper.make_tensor_value_info("x", F, [2, 3])], [helper.make_tensor_value_info("y", F, [2, 3])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "k"),
         numpy_helper.from_array(np.array([0.5, 1.0, 1.5], np.float32), "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _loop_model():
    """Loop(3): x += 1 (on numpy), ts scans Tanh(x), which is perturbed from the second iteration
    (x[0] = 2 there)."""
    body = helper.make_graph(
        [helper.make_node("Sub", ["x_in", "minus_one"], ["x_out"], name="body_step"),
         helper.make_node("Tanh", ["x_out"], ["t"], name="body_tanh"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
                 helper.make_tensor_value_info("x_in", F, [2, 3])],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("x_out", F, [2, 3]),
         helper.make_tensor_value_info("t", F, [2, 3])],
        [numpy_helper.from_array(np.array(-1.0, np.float32), "minus_one")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "c", "x"], ["final", "ts"], body=body, name="the_loop")],
        "g", [helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info("final", F, [2, 3]), helper.make_tensor_value_info("ts", F, [3, 2, 3])],
        [numpy_helper.from_array(np.array(3, np.int64), "n"), numpy_helper.from_array(np.array(True), "c")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_fused_divergence_names_the_node_with_fusion_off(tmp_path):
    path = _save(_chain_model(), tmp_path)
    feeds = {"x": np.array([[1.0, 0.5, -0.5], [0.25, -1.0, 2.0]], np.float32)}  # x*k = 2 > 1.5: perturbed
    for sides in (("fusing_perturbed", "numpy"), ("fusing_perturbed", "onnxruntime")):
        found, _ = diff(path, sides, feeds)
        assert found is not None, sides
        # fused, only the chain's output is seen: the Add's
        assert (found.value, found.node, found.fused) == ("shifted", "shift", ("scale", "squash", "shift"))
        assert found.unfused_checked and found.unfused is not None
        assert (found.unfused.value, found.unfused.node, found.unfused.op_type) == ("squashed", "squash", "Tanh")
        assert found.unfused.fused == () and found.unfused.providers[0] == "fusing_perturbed"
        assert found.unfused.max_abs == pytest.approx(PERTURBATION, rel=1e-5)


def test_a_fused_step_that_agrees_unfused_is_no_unfused_divergence(tmp_path):
    path = _save(_chain_model(), tmp_path)
    feeds = {"x": np.full((2, 3), 0.1, np.float32)}  # x*k = 0.2: no perturbation anywhere
    found, compared = diff(path, ("fusing_perturbed", "numpy"), feeds)
    assert found is None and compared == 2  # the chain's output and the Relu's


def test_a_loop_divergence_names_the_body_node_and_iteration(tmp_path):
    path = _save(_loop_model(), tmp_path)
    feeds = {"x": np.zeros((2, 3), np.float32)}
    found, _ = diff(path, ("fusing_perturbed", "numpy"), feeds)
    assert found is not None
    assert (found.node, found.op_type, found.value) == ("the_loop", "Loop", "ts")
    assert not found.unfused_checked  # the Loop is the model's node, not fused
    body = found.inside
    assert body is not None
    assert (body.node, body.op_type, body.value, body.iteration, body.parents) == \
        ("body_tanh", "Tanh", "t", 1, ("the_loop",))
    assert body.providers == ("fusing_perturbed", "numpy")
    assert body.max_abs == pytest.approx(PERTURBATION, rel=1e-5)
    # against onnxruntime, whose body values are not visible, the Loop itself is named
    found, _ = diff(path, ("fusing_perturbed", "onnxruntime"), feeds)
    assert found is not None and found.node == "the_loop" and found.inside is None


def test_cli_diff_reports_inside(tmp_path, capsys):
    chain = _save(_chain_model(), tmp_path)
    np.save(tmp_path / "x.npy", np.full((2, 3), 1.0, np.float32))
    x_feed = f"x={tmp_path / 'x.npy'}"
    assert main(["diff", chain, "--providers", "fusing_perturbed,numpy", "--input", x_feed]) == 2
    out = capsys.readouterr().out
    assert "produced by fused step 'fused_chain' of nodes 'scale', 'squash', 'shift'" in out
    assert "with fusion off: value 'squashed' of node 'squash' (Tanh), max abs error 0.25" in out
    loop_dir = tmp_path / "loop"
    loop_dir.mkdir()
    loop = _save(_loop_model(), loop_dir)
    np.save(tmp_path / "z.npy", np.zeros((2, 3), np.float32))
    assert main(["diff", loop, "--providers", "fusing_perturbed,numpy", "--input", f"x={tmp_path / 'z.npy'}"]) == 2
    out = capsys.readouterr().out
    assert "first divergence: value 'ts' of node 'the_loop' (Loop)" in out
    assert "inside 'the_loop': iteration 1, value 't' of body node 'body_tanh' (Tanh), max abs error 0.25" in out


def test_a_divergence_out_of_an_optimizer_made_node_names_the_models_node(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
         helper.make_node("Add", ["m", "b"], ["a"], name="add"),
         helper.make_node("Relu", ["a"], ["y"], name="relu")],
        "g", [helper.make_tensor_value_info("x", F, [2, 3])], [helper.make_tensor_value_info("y", F, [2, 4])],
        [numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), "w"),
         numpy_helper.from_array(np.full(4, 0.5, np.float32), "b")])
    path = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), tmp_path)
    feeds = {"x": np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]], np.float32)}
    found, _ = diff(path, ("perturbed_gemm", "numpy"), feeds, level=int(ort.GraphOptimizationLevel.ORT_ENABLE_ALL))
    assert found is not None
    assert found.op_type == "FusedGemm" and found.node not in ("mm", "add", "relu")  # the optimizer's node
    assert found.unfused_checked and found.unfused is not None
    assert (found.unfused.value, found.unfused.node, found.unfused.op_type) == ("m", "mm", "MatMul")
    assert found.unfused.max_abs == pytest.approx(PERTURBATION, rel=1e-5)
