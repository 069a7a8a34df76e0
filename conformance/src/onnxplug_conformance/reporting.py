"""Conformance reports: per-test outcomes, counts overall / per layer / per op, JSON and tables.

Outcomes:

``pass``         ran on the provider and matched (node tests: every node ran on the provider)
``fail``         ran and gave wrong outputs (an ``AssertionError``)
``error``        raised anything else: the provider, the runtime, or a fixture
``xfail``        listed as a deviation, and failed as listed
``xpass``        listed as a deviation, but passed: the list is stale, the run fails
``not-claimed``  the provider does not run every node of the test (never a pass)
``skipped``      does not apply here (provider unavailable, onnxruntime missing, opt-in check)
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

OUTCOMES = ("pass", "fail", "error", "xfail", "xpass", "not-claimed", "skipped")
LAYER_ORDER = ("contract", "node", "model", "zoo")
#: Layers shown in tables only when the run has tests of them (not run by default).
OPTIONAL_LAYERS = frozenset({"zoo"})
#: Outcomes meaning the provider ran the test (for "claimed ops").
RAN = frozenset({"pass", "fail", "error", "xfail", "xpass"})
#: Outcomes that fail a run.
FAILING = frozenset({"fail", "error", "xpass"})
_SEVERITY = {"pass": 0, "skipped": 1, "not-claimed": 2, "xfail": 3, "fail": 4, "xpass": 5, "error": 6}


@dataclass
class TestRecord:
    """One test's outcome. ``op`` is the op a node test is about; empty for other layers."""

    __test__ = False  # a record, not a pytest test class

    id: str
    layer: str
    outcome: str
    reason: str = ""
    op: str = ""
    duration: float = 0.0

    def merge(self, outcome: str, reason: str, duration: float) -> None:
        """Fold in another phase (setup, call, teardown): the most severe outcome wins."""
        self.duration += duration
        if _SEVERITY[outcome] > _SEVERITY[self.outcome]:
            self.outcome, self.reason = outcome, reason


def count(records: Iterable[TestRecord]) -> dict[str, int]:
    """``{"tests": N, "pass": .., "fail": .., ...}`` with every outcome present."""
    counter = Counter(r.outcome for r in records)
    total = sum(counter.values())
    return {"tests": total, **{o: counter.get(o, 0) for o in OUTCOMES}}


@dataclass
class ConformanceReport:
    """Everything a run found out about one provider."""

    provider: str
    provider_version: str = ""
    provider_options: dict[str, Any] = field(default_factory=dict)
    available: bool = True
    availability_reason: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    complete: bool = True
    duration_s: float = 0.0
    deviation_sources: list[str] = field(default_factory=list)
    unknown_deviations: list[str] = field(default_factory=list)
    records: dict[str, TestRecord] = field(default_factory=dict)

    def layer_records(self, layer: str) -> list[TestRecord]:
        """The records of one layer."""
        return [r for r in self.records.values() if r.layer == layer]

    def per_op(self) -> dict[str, dict[str, int]]:
        """Counts of the node tests of each op, sorted by op."""
        ops: dict[str, list[TestRecord]] = {}
        for record in self.layer_records("node"):
            ops.setdefault(record.op, []).append(record)
        return {op: count(ops[op]) for op in sorted(ops)}

    def claimed_ops(self) -> list[str]:
        """Ops with at least one node test that ran entirely on the provider."""
        return sorted({r.op for r in self.layer_records("node") if r.outcome in RAN})

    def ok(self) -> bool:
        """No failure, error, unexpected pass or stale deviation."""
        return not self.unknown_deviations and not any(r.outcome in FAILING for r in self.records.values())

    def to_json(self) -> dict[str, Any]:
        """The JSON document of the report."""
        layers = {layer: count(self.layer_records(layer)) for layer in LAYER_ORDER}
        node_ops = sorted({r.op for r in self.layer_records("node")})
        return {
            "provider": self.provider,
            "provider_version": self.provider_version,
            "provider_options": self.provider_options,
            "available": self.available,
            "availability_reason": self.availability_reason,
            "versions": self.versions,
            "complete": self.complete,
            "duration_s": round(self.duration_s, 2),
            "ok": self.ok(),
            "counts": {"overall": count(self.records.values()), **layers},
            "claimed_ops": self.claimed_ops(),
            "node_test_ops": len(node_ops),
            "per_op": self.per_op(),
            "deviations": {"sources": self.deviation_sources, "unknown_ids": self.unknown_deviations},
            "tests": {key: asdict(r) for key, r in sorted(self.records.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConformanceReport:
        """Rebuild a report from its JSON document (for tables of saved reports)."""
        report = cls(data["provider"], data.get("provider_version", ""), dict(data.get("provider_options", {})),
                     data.get("available", True), data.get("availability_reason", ""),
                     dict(data.get("versions", {})), data.get("complete", True), data.get("duration_s", 0.0),
                     list(data.get("deviations", {}).get("sources", [])),
                     list(data.get("deviations", {}).get("unknown_ids", [])))
        report.records = {key: TestRecord(**value) for key, value in data.get("tests", {}).items()}
        return report

    def write_json(self, path: str) -> None:
        """Write the JSON document."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=1, sort_keys=False)
            f.write("\n")


_COLUMNS = ("tests", "pass", "fail", "error", "xfail", "xpass", "not-claimed", "skipped")


def _rows(report: ConformanceReport) -> list[tuple[str, dict[str, int]]]:
    rows = [(layer, count(report.layer_records(layer))) for layer in LAYER_ORDER
            if layer not in OPTIONAL_LAYERS or report.layer_records(layer)]
    return [*rows, ("overall", count(report.records.values()))]


def _text_table(title: str, rows: list[tuple[str, dict[str, int]]], width: int) -> list[str]:
    head = f"{title:<{width}}" + "".join(f"{c:>12}" for c in _COLUMNS)
    lines = [head, "-" * len(head)]
    for label, counts in rows:
        lines.append(f"{label:<{width}}" + "".join(f"{counts[c]:>12}" for c in _COLUMNS))
    return lines


def summary_lines(report: ConformanceReport, per_op: bool = True) -> list[str]:
    """The table printed at the end of a run."""
    lines = [f"onnxplug conformance: provider {report.provider!r} {report.provider_version}".rstrip()
             + ("" if report.available else f" -- NOT AVAILABLE: {report.availability_reason}")]
    versions = ", ".join(f"{k} {v}" for k, v in report.versions.items())
    if versions:
        lines.append(versions)
    if not report.complete:
        lines.append("partial run: some tests were deselected")
    claimed = report.claimed_ops()
    node_ops = {r.op for r in report.layer_records("node")}
    if node_ops:
        lines.append(f"claimed ops: {len(claimed)} of the {len(node_ops)} ops in the node tests")
    lines += _text_table("layer", _rows(report), 12)
    if per_op and node_ops:
        width = max(12, *(len(op) + 2 for op in node_ops))
        lines += ["", *_text_table("op (node tests)", list(report.per_op().items()), width)]
    if report.unknown_deviations:
        lines.append("deviations naming no test this run ran (stale, mistyped or not claimed; the run fails): "
                     + ", ".join(report.unknown_deviations))
    return lines


def markdown_section(report: ConformanceReport) -> str:
    """A report as markdown: the layer table, the per-op table, and every non-passing claimed test."""
    out = [f"## `{report.provider}` {report.provider_version}".rstrip(), ""]
    if not report.available:
        out += [f"Not available on the machine that generated this page: {report.availability_reason}", ""]
    claimed = report.claimed_ops()
    node_ops = {r.op for r in report.layer_records("node")}
    out += [f"Claimed ops: **{len(claimed)}** of the {len(node_ops)} ops in the ONNX backend node tests.", ""]
    header = "| | " + " | ".join(_COLUMNS) + " |"
    rule = "|---|" + "---:|" * len(_COLUMNS)
    out += [header, rule]
    for label, counts in _rows(report):
        out.append(f"| {label} | " + " | ".join(str(counts[c]) for c in _COLUMNS) + " |")
    if node_ops and report.available:
        out += ["", "<details><summary>Per op (node tests)</summary>", "", header.replace("| |", "| op |"), rule]
        for op, counts in report.per_op().items():
            out.append(f"| {op} | " + " | ".join(str(counts[c]) for c in _COLUMNS) + " |")
        out += ["", "</details>"]
    odd = [r for r in report.records.values() if r.outcome in ("fail", "error", "xfail", "xpass")]
    if odd:
        out += ["", "<details><summary>Tests that ran and did not pass</summary>", "",
                "| layer | test | outcome | reason |", "|---|---|---|---|"]
        for r in sorted(odd, key=lambda r: (LAYER_ORDER.index(r.layer), r.id)):
            reason = " ".join(r.reason.split())[:200].replace("|", "\\|")
            out.append(f"| {r.layer} | `{r.id}` | {r.outcome} | {reason} |")
        out += ["", "</details>"]
    return "\n".join(out) + "\n"
