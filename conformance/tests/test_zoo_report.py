"""The zoo's page: one row per model, one column per provider with saved results, and what each cell says."""

from __future__ import annotations

from pathlib import Path

from onnxplug_conformance.provider_spec import resolve_provider
from onnxplug_conformance.zoo import results
from onnxplug_conformance.zoo.build import build_all
from onnxplug_conformance.zoo.registry import all_models, get_model
from onnxplug_conformance.zoo.report import main, markdown, ordered_entries, table_lines
from onnxplug_conformance.zoo.runner import run_zoo_model
from zoo_fakes import fake_zoo  # noqa: F401 - a fixture

VERSIONS = {"onnxplug": "0.1.0", "onnxruntime": "1.32.0"}


def _run(folder: Path, provider: str, names: list[str]) -> list[dict]:
    found = []
    for name in names:
        result = run_zoo_model(get_model(name), folder / "models" / f"{name}.onnx", provider)
        found.append(result.to_json())
    results.save(folder, provider, "9.9", VERSIONS, f"onnxplug conformance {provider} --zoo", found)
    return found


def _row(text: str, name: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def test_page_has_a_row_per_model_and_a_column_per_provider(fake_zoo: Path) -> None:
    build_all(all_models(), isolate=False)
    _run(fake_zoo, "numpy", ["fake_mlp", "fake_tokens"])
    wrong = resolve_provider("broken_providers:WrongReluProvider").name
    _run(fake_zoo, wrong, ["fake_mlp"])
    greedy = resolve_provider("broken_providers:GreedyProvider").name
    _run(fake_zoo, greedy, ["fake_tokens"])
    text = markdown(ordered_entries(fake_zoo), results.load_all(fake_zoo))
    header = next(line for line in text.splitlines() if line.startswith("| model |"))
    assert header == "| model | family | source | exporter | opset | oracle | `numpy` | `greedy` | `wrong_relu` |"
    mlp = _row(text, "fake_mlp")
    assert mlp[1:6] == ["vision", mlp[2], "onnx.helper", "17", "onnxruntime"] and mlp[2].startswith("onnx ")
    assert mlp[6] == "match, 100%" and mlp[7] == "not run"
    assert mlp[8].startswith("**mismatch**, 33%: shape set 0: output 'y'") and mlp[8].endswith("(+3)")
    tokens = _row(text, "fake_tokens")
    assert tokens[6] == "match, 100%" and tokens[7].startswith("**error**, -: `NotImplementedOpError: ")
    assert _row(text, "fake_broken")[6:] == ["not built"] * 3
    assert _row(text, "fake_reference")[5] == "reference"
    assert [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| `fake_")][:6] == \
        ["| `fake_mlp`", "| `fake_tokens`", "| `fake_strings`", "| `fake_quantized`", "| `fake_reference`",
         "| `fake_broken`"]  # the registry's order
    assert "## Models that could not be built" in text and "RuntimeError: the exporter exploded" in text
    assert "| `numpy` | 2 | 0 | 0 | 4 |" in text and "| `wrong_relu` | 0 | 1 | 0 | 5 |" in text
    assert "0.0001 * max(1, max|expected|) + 0.001 * |expected|" in text  # the rules, with their numbers
    assert "`onnxplug conformance wrong_relu --zoo`" in text and "onnxruntime 1.32.0" in text


def test_results_of_partial_runs_accumulate(fake_zoo: Path) -> None:
    build_all(all_models(), isolate=False)
    _run(fake_zoo, "numpy", ["fake_mlp"])
    _run(fake_zoo, "numpy", ["fake_strings"])
    saved = results.load_all(fake_zoo)["numpy"]["models"]
    assert set(saved) == {"fake_mlp", "fake_strings"}


def test_page_from_the_command_line_is_deterministic(fake_zoo: Path, tmp_path: Path) -> None:
    build_all(all_models(), isolate=False)
    _run(fake_zoo, "numpy", ["fake_mlp"])
    out = tmp_path / "zoo.md"
    assert main(["-o", str(out)]) == 0
    first = out.read_text()
    assert main(["-o", str(out)]) == 0 and out.read_text() == first
    assert str(fake_zoo) not in first


def test_terminal_table() -> None:
    lines = table_lines([
        {"name": "a", "match": True, "claimed": 0.5, "time_s": 0.25, "error": "", "problems": []},
        {"name": "b", "match": False, "claimed": None, "time_s": 0.0, "error": "TypeError: boom", "problems": []},
        {"name": "c", "match": False, "claimed": 1.0, "time_s": 1.0, "error": "", "problems": ["output 'y': off"]}])
    assert lines[2].split() == ["a", "match", "50%", "0.25"]
    assert lines[3].split()[:4] == ["b", "error", "-", "0.00"] and lines[3].endswith("TypeError: boom")
    assert lines[4].split()[:2] == ["c", "mismatch"] and lines[4].endswith("output 'y': off")
    assert lines[-1] == "1 of 3 zoo models match"
    assert table_lines([]) == []


def test_a_long_only_list_is_shown_as_its_count(fake_zoo: Path) -> None:
    build_all(all_models(), isolate=False)
    names = ["fake_mlp", "fake_tokens", "fake_strings", "fake_quantized"]
    found = [run_zoo_model(get_model(n), fake_zoo / "models" / f"{n}.onnx", "numpy").to_json() for n in names]
    results.save(fake_zoo, "numpy", "9.9", VERSIONS, "onnxplug conformance numpy --zoo --only " + ",".join(names), found)
    text = markdown(ordered_entries(fake_zoo), results.load_all(fake_zoo))
    assert "`onnxplug conformance numpy --zoo --only <4 models>`" in text
    saved = results.load_all(fake_zoo)["numpy"]["command"]
    assert saved.endswith("--only fake_mlp,fake_tokens,fake_strings,fake_quantized")  # kept whole in the results


def test_a_result_of_an_earlier_build_says_so(fake_zoo: Path) -> None:
    from onnxplug_conformance.zoo.report import cell

    entry = {"status": "built", "sha256": "new"}
    result = {"match": True, "claimed": 1.0, "sha256": "old"}
    assert cell(result, entry) == "match, 100% (an earlier build of the model)"
    assert cell({**result, "sha256": "new"}, entry) == "match, 100%"
