"""Report counting, JSON round trip and tables, on records written here by hand."""

from __future__ import annotations

from onnxplug_conformance.reporting import ConformanceReport, TestRecord, count, markdown_section, summary_lines


def sample_report() -> ConformanceReport:
    report = ConformanceReport("p", "1.0", versions={"onnx": "1.23.2"})
    rows = [("node", "test_abs", "Abs", "pass"), ("node", "test_abs_2", "Abs", "fail"),
            ("node", "test_relu", "Relu", "not-claimed"), ("node", "test_tree", "ai.onnx.ml::TreeEnsemble", "xfail"),
            ("contract", "test_identity", "", "pass"), ("contract", "test_round_trip[int4]", "", "not-claimed"),
            ("model", "gru", "", "error")]
    for layer, test_id, op, outcome in rows:
        report.records[f"{layer}:{test_id}"] = TestRecord(test_id, layer, outcome, f"why {test_id}", op)
    return report


def test_counts_per_layer_and_op() -> None:
    report = sample_report()
    data = report.to_json()
    assert data["counts"]["node"] == {"tests": 4, "pass": 1, "fail": 1, "error": 0, "xfail": 1, "xpass": 0,
                                      "not-claimed": 1, "skipped": 0}
    assert data["counts"]["overall"]["tests"] == 7
    assert data["per_op"]["Abs"]["pass"] == 1 and data["per_op"]["Abs"]["fail"] == 1
    assert data["claimed_ops"] == ["Abs", "ai.onnx.ml::TreeEnsemble"]  # Relu never ran on the provider
    assert data["ok"] is False


def test_merge_keeps_the_most_severe_phase() -> None:
    record = TestRecord("t", "node", "pass")
    record.merge("error", "teardown: boom", 0.5)
    record.merge("skipped", "late skip", 0.0)
    assert (record.outcome, record.reason, record.duration) == ("error", "teardown: boom", 0.5)


def test_stale_deviation_makes_the_report_not_ok() -> None:
    report = ConformanceReport("p")
    report.records["node:a"] = TestRecord("a", "node", "pass")
    assert report.ok()
    report.unknown_deviations.append("node:gone")
    assert not report.ok()


def test_json_round_trip() -> None:
    report = sample_report()
    again = ConformanceReport.from_json(report.to_json())
    assert again.to_json() == report.to_json()


def test_text_table() -> None:
    lines = summary_lines(sample_report())
    assert lines[0] == "onnxplug conformance: provider 'p' 1.0"
    assert "claimed ops: 2 of the 3 ops in the node tests" in lines
    node = next(line.split() for line in lines if line.startswith("node "))
    assert node == ["node", "4", "1", "1", "0", "1", "0", "1", "0"]
    assert any(line.startswith("ai.onnx.ml::TreeEnsemble") for line in lines)
    assert not any(line.startswith("Abs") for line in summary_lines(sample_report(), per_op=False))


def test_markdown_lists_what_ran_and_did_not_pass() -> None:
    text = markdown_section(sample_report())
    assert "| node | 4 | 1 | 1 | 0 | 1 | 0 | 1 | 0 |" in text
    assert "| Abs | 2 | 1 | 1 |" in text
    assert "`test_abs_2` | fail | why test_abs_2" in text
    assert "`gru` | error" in text
    assert "test_relu" not in text  # not claimed: counted, not listed


def test_count_of_nothing() -> None:
    assert count([]) == {"tests": 0, "pass": 0, "fail": 0, "error": 0, "xfail": 0, "xpass": 0,
                         "not-claimed": 0, "skipped": 0}
