"""The pass manager: levels, ordering, third-party passes through the hook, errors, the CLI."""

from __future__ import annotations

import onnx
import pytest

from onnxplug.cli import main as cli_main
from onnxplug.hookspecs import hookimpl
from onnxplug.ir import load_model
from onnxplug.optimizer import GraphPass, PassError, PassResult, optimize_model, registered_passes
from onnxplug.optimizer.manager import reset_registered_passes
from onnxplug.options import GraphOptimizationLevel
from onnxplug.plugins import get_catalog
from tests.optimizer.util import F, model, node, numpy_providers, op_types, rand


def _small() -> onnx.ModelProto:
    return model([node("Identity", ["x"], ["i"]), node("Conv", ["i", "w"], ["c"]), node("Relu", ["c"], ["y"])],
                 [("x", F, [1, 2, 4, 4])], [("y", F, [1, 3, 4, 4])], {"w": rand(3, 2, 1, 1)})


def test_every_builtin_pass_declares_level_and_changes_and_is_ordered():
    passes = registered_passes()
    assert len(passes) >= 20
    keys = [(int(p.level), p.order, p.__name__) for p in passes]
    assert keys == sorted(keys)
    for p in passes:
        assert p.changes and p.level in list(GraphOptimizationLevel), p
    levels = {p.__name__: p.level for p in passes}
    assert levels["ConstantFolding"] == GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert levels["GeluFusion"] == GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    assert levels["LayoutTransform"] == GraphOptimizationLevel.ORT_ENABLE_LAYOUT


@pytest.mark.parametrize("level, expected", [
    (1, {"Conv": 1, "Relu": 1}),
    (2, {"com.onnxplug:FusedConv": 1}),
    (99, {"com.onnxplug:FusedConv": 1}),
])
def test_levels_choose_passes(level, expected):
    m = load_model(_small())
    reports = optimize_model(m, level, numpy_providers())
    assert op_types(m) == expected
    ran = {r.name for r in reports}
    assert ("ConvActivationFusion" in ran) == (level >= 2)
    assert ("LayoutTransform" in ran) == (level >= 3)


class _CountingPass(GraphPass):
    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "counts nodes (test)"

    def run(self, model, providers):
        return PassResult(False, {"nodes_seen": len(model.graph.nodes)})


class _Plugin:
    @hookimpl
    def onnxplug_register_passes(self, register):
        register(_CountingPass)


def test_third_party_pass_through_the_hook():
    plugin = _Plugin()
    get_catalog().pm.register(plugin, name="test-passes")
    reset_registered_passes()
    try:
        assert _CountingPass in registered_passes()
        reports = {r.name: r for r in optimize_model(load_model(_small()), 1, numpy_providers())}
        assert reports["_CountingPass"].counts["nodes_seen"] >= 2
    finally:
        get_catalog().pm.unregister(plugin)
        reset_registered_passes()
    assert _CountingPass not in registered_passes()


class _BrokenPass(GraphPass):
    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "removes a producer but not its readers (test)"

    def run(self, model, providers):
        model.graph.nodes.pop(0)
        return PassResult(True, {"broken": 1})


class _CrashingPass(GraphPass):
    changes = "raises (test)"

    def run(self, model, providers):
        raise ZeroDivisionError("oops")


@pytest.mark.parametrize("bad, message", [(_BrokenPass, "left an invalid graph"), (_CrashingPass, "ZeroDivisionError")])
def test_faulty_pass_fails_with_its_name(bad, message):
    from onnxplug.optimizer import PassManager

    with pytest.raises(PassError, match=f"{bad.__name__}.*{message}|{message}.*{bad.__name__}"):
        PassManager([bad()]).run(load_model(_small()), numpy_providers())


def test_cli_optimize_prints_one_line_per_pass(tmp_path, capsys):
    source, target = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save_model(_small(), str(source))
    assert cli_main(["optimize", str(source), "-o", str(target), "--level", "extended"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    expected = [p.__name__ for p in registered_passes() if int(p.level) <= 2]
    assert [line.split(":")[0] for line in lines[:-1]] == expected
    assert "IdentityElimination: removed=1" in lines
    assert "ConvActivationFusion: fused=1" in lines
    assert lines[-1].startswith("nodes: 3 -> 1")
    saved = onnx.load(str(target))
    onnx.checker.check_model(saved)
    assert [n.op_type for n in saved.graph.node] == ["FusedConv"] and saved.functions


def test_counts_are_logged_at_info(caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="onnxplug.optimizer"):
        optimize_model(load_model(_small()), 2, numpy_providers())
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("pass ConvActivationFusion: changed 1 time(s) {'fused': 1}") for m in messages)
    assert any(m.startswith("pass IdentityElimination:") and "'removed': 1" in m for m in messages)
