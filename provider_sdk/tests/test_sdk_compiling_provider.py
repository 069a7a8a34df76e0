"""CompilingProvider: chain claiming, convexity, values with outside readers, and random graphs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from sdk_support import FusingProvider, make_model, plain_session, reachable, run_onnxruntime

import onnxplug
from onnxplug.ir import load_model
from onnxplug_sdk import FUSABLE_ELEMENTWISE, CompilingProvider, GraphView


def _view(model: onnx.ModelProto) -> GraphView:
    graph = load_model(model).graph
    return GraphView(graph, graph.nodes)


def _claims(model: onnx.ModelProto) -> list[tuple[bool, list[str]]]:
    return [(c.fused, [n.name for n in c.nodes]) for c in FusingProvider().get_capability(_view(model))]


def _node(op: str, inputs: list[str], output: str) -> onnx.NodeProto:
    return helper.make_node(op, inputs, [output], name=output)


def test_a_linear_chain_is_one_fused_claim_before_single_nodes() -> None:
    model = make_model([_node("Add", ["x", "x"], "a"), _node("Relu", ["a"], "b"), _node("Mul", ["b", "x"], "c"),
                        _node("Softmax", ["c"], "d"), _node("Relu", ["d"], "y")], {"x": [2, 3]}, {"y": [2, 3]})
    assert _claims(model) == [(True, ["a", "b", "c"]), (False, ["y"])]


def test_a_non_fusable_node_splits_chains() -> None:
    model = make_model([_node("Add", ["x", "x"], "a"), _node("Tanh", ["a"], "b"), _node("Softmax", ["b"], "c"),
                        _node("Sigmoid", ["c"], "d"), _node("Neg", ["d"], "y")], {"x": [2, 3]}, {"y": [2, 3]})
    assert _claims(model) == [(True, ["a", "b"]), (True, ["d", "y"])]


def test_no_fusion_through_a_path_that_leaves_and_reenters() -> None:
    # a feeds b (fusable) and s (Softmax, not fusable); c reads both. {a, b, c} is not convex: a -> s -> c.
    model = make_model([_node("Add", ["x", "x"], "a"), _node("Relu", ["a"], "b"), _node("Softmax", ["a"], "s"),
                        _node("Mul", ["b", "s"], "y")], {"x": [2, 3]}, {"y": [2, 3]})
    claims = _claims(model)
    fused = [names for is_fused, names in claims if is_fused]
    assert fused == [["a", "b"]]
    assert not any({"a", "y"} <= set(names) for names in fused)


def test_a_value_with_outside_readers_is_exported_not_a_reason_to_split(register_provider) -> None:  # type: ignore[no-untyped-def]
    # b is read by the chain (c) and by Softmax outside it, which does not lead back: fusing a, b, c is valid.
    model = make_model([_node("Add", ["x", "x"], "a"), _node("Relu", ["a"], "b"), _node("Mul", ["b", "b"], "c"),
                        _node("Softmax", ["b"], "s"), _node("Add", ["s", "x"], "t")],
                       {"x": [2, 3]}, {"c": [2, 3], "t": [2, 3], "a": [2, 3]})
    assert _claims(model)[0] == (True, ["a", "b", "c"])
    register_provider(FusingProvider)
    FusingProvider.compiled.clear()
    session = plain_session(model, ["sdk_fusing"])
    (fused,) = [g for g in session.engine.groups if g.fused]
    assert fused.inputs == ["x"]
    assert sorted(fused.outputs) == ["a", "b", "c"]  # a: graph output, b: read by Softmax, c: graph output
    assert FusingProvider.compiled[0].outputs == fused.outputs
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    got = session.run(None, {"x": x})
    for g, w in zip(got, run_onnxruntime(model, {"x": x})):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_default_fusable_needs_equal_known_float_dtypes() -> None:
    provider = FusingProvider()
    floats = _view(make_model([_node("Add", ["x", "x"], "y")], {"x": [2]}, {"y": [2]}))
    ints = _view(make_model([_node("Add", ["x", "x"], "y")], {"x": [2]}, {"y": [2]}, elem_type=TensorProto.INT32))
    doubles = _view(make_model([_node("Add", ["x", "x"], "y")], {"x": [2]}, {"y": [2]}, elem_type=TensorProto.DOUBLE))
    assert provider.fusable(floats.nodes[0], floats)
    assert provider.fusable(doubles.nodes[0], doubles)
    assert not provider.fusable(ints.nodes[0], ints)
    mixed = make_model([_node("Cast", ["x"], "c"), _node("Add", ["c", "x"], "y")], {"x": [2]}, {"y": [2]})
    mixed.graph.node[0].attribute.append(helper.make_attribute("to", TensorProto.DOUBLE))
    view = _view(mixed)
    assert not CompilingProvider.fusable(provider, view.nodes[1], view)  # double + float: not the same dtype
    assert {"Add", "Relu", "Mul", "Sigmoid"} <= FUSABLE_ELEMENTWISE and "Softmax" not in FUSABLE_ELEMENTWISE


def test_compile_is_left_to_the_subclass() -> None:
    class NoCompile(CompilingProvider):
        name = "sdk_t_nocompile"

    model = make_model([_node("Add", ["x", "x"], "a"), _node("Relu", ["a"], "y")], {"x": [2]}, {"y": [2]})
    view = _view(model)
    (claim,) = NoCompile().get_capability(view)
    assert claim.fused and claim.name == "sdk_t_nocompile_fused_a"
    with pytest.raises(NotImplementedError, match="must build kernels"):
        from onnxplug_sdk import FusedSubgraph, KernelContext

        provider = NoCompile()
        provider.compile(FusedSubgraph("g", list(claim.nodes), ["x"], ["y"], view), KernelContext(provider))


# --- random graphs: every claim set must be runnable, convex and (greedily) maximal ------------------

_OPS = ["Add", "Mul", "Sub", "Relu", "Sigmoid", "Tanh", "Softmax", "Softmax", "Abs"]


def _random_model(rng: np.random.Generator, size: int) -> onnx.ModelProto:
    values = ["x", "z"]
    nodes = []
    for i in range(size):
        op = str(rng.choice(_OPS))
        arity = 2 if op in ("Add", "Mul", "Sub") else 1
        picks = [values[int(j)] for j in rng.integers(max(0, len(values) - 5), len(values), arity)]
        nodes.append(_node(op, picks, f"v{i}"))
        values.append(f"v{i}")
    read = {name for n in nodes for name in n.input}
    outputs = [v for v in values[2:] if v not in read or rng.random() < 0.2]
    return make_model(nodes, {"x": [3, 4], "z": [3, 4]}, {o: [3, 4] for o in outputs})


def _check_groups(session: onnxplug.InferenceSession) -> None:
    graph = session.engine.model.graph
    group_of = {}
    for gi, group in enumerate(session.engine.groups):
        for n in group.nodes:
            group_of[n.name] = gi
    producers = {o: n for n in graph.nodes for o in n.outputs}
    node_edges: dict[int, set[int]] = {}
    index = {n.name: i for i, n in enumerate(graph.nodes)}
    group_edges: dict[int, set[int]] = {}
    for n in graph.nodes:
        for name in n.inputs:
            p = producers.get(name)
            if p is not None:
                node_edges.setdefault(index[p.name], set()).add(index[n.name])
                if group_of[p.name] != group_of[n.name]:
                    group_edges.setdefault(group_of[p.name], set()).add(group_of[n.name])
    # The graph of groups is acyclic: no group reaches itself.
    for gi in range(len(session.engine.groups)):
        assert gi not in reachable(iter([gi]), group_edges), f"group {gi} is on a cycle"
    for group in session.engine.groups:
        members = {index[n.name] for n in group.nodes}
        if not group.fused:
            continue
        assert len(members) >= 2 and all(n.op_type != "Softmax" for n in group.nodes)
        # Convex: nothing outside is both reachable from the group and reaching it.
        after = reachable(iter(members), node_edges) - members
        assert not any(members & reachable(iter([v]), node_edges) for v in after)
    # Greedily maximal: two fusable neighbours in different groups could not merge without a cycle.
    for n in graph.nodes:
        for name in n.inputs:
            p = producers.get(name)
            if p is None or n.op_type == "Softmax" or p.op_type == "Softmax":
                continue
            gp, gn = group_of[p.name], group_of[n.name]
            if gp != gn:
                merged_edges: dict[int, set[int]] = {}
                for g, targets in group_edges.items():
                    source = gp if g == gn else g
                    merged_edges.setdefault(source, set()).update(gp if t == gn else t for t in targets)
                merged_edges.setdefault(gp, set()).discard(gp)
                assert gp in reachable(iter([gp]), merged_edges), (
                    f"{p.name} and {n.name} are fusable neighbours left in separate groups")


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_partition_into_valid_fused_groups(seed: int, register_provider) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    model = _random_model(rng, int(rng.integers(6, 18)))
    register_provider(FusingProvider)
    session = plain_session(model, ["sdk_fusing"])
    _check_groups(session)
    feeds = {n: rng.standard_normal((3, 4)).astype(np.float32) for n in ("x", "z")}
    for got, want in zip(session.run(None, feeds), run_onnxruntime(model, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --- groups a subclass claims itself (like numba's conv groups) ----------------------------------------

class _SoftmaxPairProvider(FusingProvider):
    """Claims all Softmax nodes as one fused group of its own, then chains around it."""

    name = "sdk_t_pairs"
    pass_fixed_groups = True

    def get_capability(self, view: GraphView, **_: object) -> list:  # type: ignore[override]
        from onnxplug_sdk import Capability

        pair = [n for n in view.nodes if n.op_type == "Softmax"]
        rest = GraphView(view.graph, [n for n in view.nodes if n.op_type != "Softmax"])
        fixed = [pair] if self.pass_fixed_groups else []
        return [Capability(tuple(pair), fused=True, name="softmax_pair"),
                *super().get_capability(rest, fixed_groups=fixed)]


def _pair_model() -> onnx.ModelProto:
    # Chain candidates a -> b; the pair {c1, c2} reads a and feeds b: fusing a and b would need the pair
    # both after a and before b, although it runs as one step.
    return make_model([_node("Relu", ["x"], "a"), _node("Softmax", ["x"], "c1"), _node("Softmax", ["a"], "c2"),
                       _node("Add", ["a", "c1"], "b")], {"x": [2, 3]}, {"b": [2, 3], "c2": [2, 3]})


def test_fixed_groups_keep_chains_from_closing_a_cycle_through_them(register_provider) -> None:  # type: ignore[no-untyped-def]
    register_provider(_SoftmaxPairProvider)
    model = _pair_model()
    session = plain_session(model, ["sdk_t_pairs"])
    fused = [[n.name for n in g.nodes] for g in session.engine.groups if g.fused]
    assert fused == [["c1", "c2"]]
    assert [(a.node_name, a.provider) for a in session.get_node_assignments()
            if a.node_name in ("a", "b")] == [("a", "sdk_t_pairs"), ("b", "numpy")]
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    for got, want in zip(session.run(None, {"x": x}), run_onnxruntime(model, {"x": x})):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_without_fixed_groups_the_same_claims_cannot_be_planned(register_provider) -> None:  # type: ignore[no-untyped-def]
    class Careless(_SoftmaxPairProvider):
        name = "sdk_t_careless"
        pass_fixed_groups = False

    register_provider(Careless)
    with pytest.raises(onnxplug.errors.PartitionError, match="not convex"):
        plain_session(_pair_model(), ["sdk_t_careless"])
