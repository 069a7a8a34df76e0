"""The page of docs/conformance.md, rendered from reports written here by hand."""

from __future__ import annotations

from onnxplug_conformance.report_all import COMMAND, installed_providers, render
from onnxplug_conformance.reporting import ConformanceReport, TestRecord


def test_page_has_summary_rows_sections_and_failures() -> None:
    good = ConformanceReport("numpy", "0.1.0", versions={"onnx": "1.23.2"})
    good.records["node:test_abs"] = TestRecord("test_abs", "node", "pass", op="Abs")
    good.records["node:test_x"] = TestRecord("test_x", "node", "error", "KernelError: boom", op="X")
    away = ConformanceReport("opencl", "0.1.0", available=False, availability_reason="no OpenCL platform")
    page = render([("numpy", good, ""), ("opencl", away, ""), ("crashy", None, "Traceback ...")],
                  ["plugin `cupy` (onnxplug-cupy 0.1) failed to load: ImportError: no cupy"])
    assert COMMAND in page and "Versions: onnx 1.23.2." in page
    assert "| `numpy` | 2 | 1 | 0 | 1 | 0 | 0 | 0 / 0 | 0 / 0 |" in page
    assert "Not available on the machine that generated this page: no OpenCL platform" in page
    assert "| `opencl` | not available here: no OpenCL platform |" in page
    assert "| `crashy` | the run did not finish |" in page and "Traceback ..." in page
    assert "`test_x` | error | KernelError: boom" in page
    assert "failed to load: ImportError: no cupy" in page


def test_installed_providers_exclude_the_null_control() -> None:
    names, _ = installed_providers()
    assert names[0] == "numpy" and "null" not in names


def test_page_from_saved_reports(tmp_path) -> None:
    from onnxplug_conformance.report_all import main

    for name, passed in (("numpy", 3), ("thirdparty", 1)):
        report = ConformanceReport(name, "1")
        for i in range(passed):
            report.records[f"node:test_{i}"] = TestRecord(f"test_{i}", "node", "pass", op="Abs")
        report.write_json(str(tmp_path / f"conformance-{name}.json"))
    page_path = tmp_path / "page.md"
    assert main(["--from-json", str(tmp_path), "--output", str(page_path)]) == 0
    page = page_path.read_text()
    assert page.index("## `numpy` 1") < page.index("## `thirdparty` 1")
    assert "| `numpy` | 1 | 3 |" in page and "| `thirdparty` | 1 | 1 |" in page
