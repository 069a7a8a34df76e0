"""The whole suite against the null provider, which claims nothing: zero passes in the node and
model layers, every node test "not claimed", and the contract tests pass or say why they skip."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SuiteRun, run_suite

from onnxplug_conformance.backend_cases import load_cases


@pytest.fixture(scope="module")
def null_run(tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    return run_suite(tmp_path_factory.mktemp("null"), "null")


def test_run_succeeds(null_run: SuiteRun) -> None:
    assert null_run.returncode == 0, null_run.output[-3000:]
    assert null_run.report is not None and null_run.report["ok"] and null_run.report["complete"]


def test_every_node_test_is_not_claimed_and_none_passes(null_run: SuiteRun) -> None:
    node = null_run.counts("node")
    assert node["tests"] == len(load_cases())
    assert node["not-claimed"] == node["tests"]
    assert node["pass"] == 0 and node["fail"] == 0 and node["error"] == 0
    assert null_run.report["claimed_ops"] == []


def test_not_claimed_reason_comes_from_the_partitioner(null_run: SuiteRun) -> None:
    record = null_run.report["tests"]["node:test_abs"]
    assert record["op"] == "Abs"
    assert record["reason"].startswith("not claimed: ") and "Abs" in record["reason"]
    assert "<cache>" in record["reason"] or "/" not in record["reason"].split("Abs")[0]


def test_per_op_counts_add_up(null_run: SuiteRun) -> None:
    per_op = null_run.report["per_op"]
    assert sum(c["tests"] for c in per_op.values()) == null_run.counts("node")["tests"]
    assert per_op["Abs"]["not-claimed"] == per_op["Abs"]["tests"] >= 1
    assert "ai.onnx.ml::TreeEnsemble" in per_op


def test_model_layer_claims_nothing(null_run: SuiteRun) -> None:
    model = null_run.counts("model")
    assert model["tests"] == 7 and model["pass"] == 0
    pytest.importorskip("onnxruntime")
    assert model["not-claimed"] == 7


def test_contract_tests_pass_or_skip_with_reasons(null_run: SuiteRun) -> None:
    contract = null_run.counts("contract")
    assert contract["fail"] == contract["error"] == contract["xpass"] == 0
    for name in ("test_identity", "test_availability_has_a_reason_when_false", "test_availability_is_stable",
                 "test_unknown_option_is_refused_by_name", "test_allocator_and_transfer_serve_the_provider_device",
                 "test_claims_are_consistent_with_kernels", "test_registry_keys_are_well_formed",
                 "test_resolution_by_opset"):
        assert null_run.outcome("contract", name) == "pass", name
    skipped = [t for t in null_run.report["tests"].values() if t["layer"] == "contract" and t["outcome"] != "pass"]
    assert skipped and all(t["reason"] for t in skipped)


def test_table_is_printed(null_run: SuiteRun) -> None:
    out = null_run.output
    assert "onnxplug conformance: provider 'null'" in out
    assert "claimed ops: 0 of the" in out
    lines = [line.split() for line in out.splitlines()]
    node_row = next(row for row in lines if row[:1] == ["node"])
    assert node_row[1] == node_row[7] == str(null_run.counts("node")["tests"])  # tests == not-claimed
    assert any(row[:1] == ["Abs"] for row in lines)


def test_json_report_written_where_asked(null_run: SuiteRun, tmp_path: Path) -> None:
    assert null_run.report["provider"] == "null"
    assert null_run.report["versions"]["onnx"]
