"""Why a provider declined a node: the Decline it gives, where it is shown, and the fallback warning."""

from __future__ import annotations

import warnings
from typing import ClassVar

import numpy as np
import onnxplug as ort
import pytest
from onnx import TensorProto, helper
from onnxplug.cli import main
from onnxplug.errors import FallbackDisabledError
from onnxplug.explain import declined_nodes
from onnxplug.kernel import Kernel, KernelRegistry
from onnxplug.plugins import get_catalog
from onnxplug.provider import DECLINE_KINDS, Decline, ExecutionProvider
from onnxplug.testing.model_suite import MODEL_NAMES, build

REGISTRY = KernelRegistry("explaining")


@REGISTRY.kernel("Add", 7, 13, 14)
class Float32Add(Kernel):
    @classmethod
    def supports(cls, node, view):
        dtypes = [view.dtype_of(n) for n in node.inputs]
        if any(d != np.float32 for d in dtypes):
            return Decline("dtype", f"float32 only, got {', '.join(map(str, dtypes))}")
        return True

    def compute(self, a, b):
        return a + b


class ExplainingProvider(ExecutionProvider):
    """Has a float32 Add and nothing else."""

    name: ClassVar[str] = "explaining"
    version: ClassVar[str] = "test"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.kernel_registry = REGISTRY


class FailingExplainProvider(ExplainingProvider):
    name: ClassVar[str] = "failing_explain"

    def explain(self, node, view):
        raise RuntimeError("boom")


@pytest.fixture(scope="module", autouse=True)
def registered():
    for cls in (ExplainingProvider, FailingExplainProvider):
        get_catalog().register(cls, "tests")
    yield
    for cls in (ExplainingProvider, FailingExplainProvider):
        get_catalog().providers.pop(cls.name, None)


def _model(dtype: int = TensorProto.DOUBLE) -> bytes:
    """w = Relu(x + y): with float64 the Add is declined for its dtype, the Relu always for its op."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"], name="add"), helper.make_node("Relu", ["z"], ["w"], name="relu")],
        "g", [helper.make_tensor_value_info(n, dtype, [2]) for n in "xy"],
        [helper.make_tensor_value_info("w", dtype, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def _options(**config: str) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    for key, value in config.items():
        options.add_session_config_entry(key, value)
    return options


def test_node_assignments_carry_each_decline():
    sess = ort.InferenceSession(_model(), _options(), providers=["explaining"])
    add, relu = sess.get_node_assignments()
    assert (add.provider, relu.provider) == ("numpy", "numpy")
    assert [(d.provider, d.kind) for d in add.declined] == [("explaining", "dtype")]
    assert "float64" in add.declined[0].reason
    assert [(d.provider, d.kind) for d in relu.declined] == [("explaining", "op")]
    assert "ai.onnx::Relu" in relu.declined[0].reason


def test_claimed_nodes_have_no_declines_and_old_tuples_still_unpack():
    sess = ort.InferenceSession(_model(TensorProto.FLOAT), _options(), providers=["explaining"])
    add, relu = sess.get_node_assignments()
    assert add.provider == "explaining" and add.declined == ()
    node_name, op_type, provider = add[:3]
    assert (node_name, op_type, provider) == ("add", "Add", "explaining")
    assert relu.declined[0].kind == "op"


def test_graph_assignment_info_has_the_declines():
    options = _options(**{"session.record_ep_graph_assignment_info": "1"})
    sess = ort.InferenceSession(_model(), options, providers=["explaining"])
    nodes = [n for sub in sess.get_provider_graph_assignment_info() for n in sub.get_nodes()]
    assert [n.name for n in nodes] == ["add", "relu"]
    assert [str(n.declined[0]) for n in nodes][0].startswith("dtype: float32 only")
    assert nodes[1].declined[0].provider == "explaining"


def test_fallback_warns_by_default_and_log_severity_silences_it():
    with pytest.warns(RuntimeWarning, match=r"provider 'explaining' declined 2 node\(s\).*dtype: float32 only"):
        ort.InferenceSession(_model(), providers=["explaining"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ort.InferenceSession(_model(), _options(), providers=["explaining"])
        ort.InferenceSession(_model(TensorProto.FLOAT), providers=["numpy"])  # one provider: nothing to say


def test_disabled_fallback_error_gives_the_reasons():
    options = _options(**{"session.disable_cpu_ep_fallback": "1"})
    with pytest.raises(FallbackDisabledError, match=r"explaining: dtype: float32 only.*explaining: op: no kernel"):
        ort.InferenceSession(_model(), options, providers=["explaining"])


def test_a_failing_explain_is_a_reason_not_an_error():
    sess = ort.InferenceSession(_model(), _options(), providers=["failing_explain"])
    decline = sess.get_node_assignments()[0].declined[0]
    assert decline.kind == "other" and "RuntimeError: boom" in decline.reason


def test_decline_is_false_and_checks_its_kind():
    assert not Decline("shape", "rank 5")
    with pytest.raises(ValueError, match="not one of"):
        Decline("mood", "no")


def test_cli_run_explain(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    path.write_bytes(_model())
    assert main(["run", str(path), "--provider", "explaining", "--explain", "--repeat", "0"]) == 0
    out = capsys.readouterr().out
    assert "2 node(s) declined by a provider offered them first:" in out
    assert "  Add 'add' -> runs on numpy" in out
    assert "explaining declined it: dtype: float32 only, got float64, float64" in out
    assert "explaining declined it: op: no kernel registered for ai.onnx::Relu at opset 17" in out


@pytest.mark.parametrize("provider", ["numba", "opencl"])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_every_unclaimed_suite_node_has_a_reason(provider, name):
    if provider not in ort.get_available_providers():
        pytest.skip(f"provider {provider!r} is not installed or not available here")
    sess = ort.InferenceSession(build(name).SerializeToString(), _options(), providers=[provider])
    engine = sess.engine
    graphs = [engine.groups] + [groups for _, groups in engine.subgraph_groups]
    unclaimed = 0
    for groups in graphs:
        for group in groups:
            for node, declined in zip(group.nodes, group.declined):
                if group.provider.name == provider:
                    assert declined == ()
                    continue
                unclaimed += 1
                assert [d.provider for d in declined] == [provider], node.describe()
                assert declined[0].kind in DECLINE_KINDS and declined[0].reason, node.describe()
    assert unclaimed == sum(len(d.declined) for d in declined_nodes(engine))
