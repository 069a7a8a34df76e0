"""Building the zoo: manifest content, failures recorded, reuse, isolation, the committed copy."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import onnx
import pytest

import zoo_fakes
from onnxplug_conformance.zoo import manifest
from onnxplug_conformance.zoo.build import build_all, main, missing
from onnxplug_conformance.zoo.registry import all_models, select
from zoo_fakes import fake_zoo  # noqa: F401 - a fixture

HERE = Path(__file__).resolve().parent


def test_manifest_records_every_fact_of_a_built_model(fake_zoo: Path) -> None:
    entries = build_all(select("fake_tokens"), isolate=False)
    assert set(entries) == {m.name for m in zoo_fakes.MODELS}  # every model listed, built or not
    entry = entries["fake_tokens"]
    path = fake_zoo / "models" / "fake_tokens.onnx"
    data = path.read_bytes()
    proto = onnx.load(str(path))
    assert entry["status"] == "built" and entry["error"] == ""
    assert entry["file"] == "models/fake_tokens.onnx"
    assert entry["size"] == len(data) and entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert entry["opset"] == proto.opset_import[0].version == 17 and entry["opsets"] == {"ai.onnx": 17}
    assert entry["outputs"] == ["out"]
    assert entry["source"] == f"onnx {version('onnx')}" and entry["source_version"] == version("onnx")
    assert (entry["family"], entry["exporter"], entry["oracle"], entry["tier"], entry["seed"]) == \
        ("transformers", "onnx.helper", "onnxruntime", "full", 3)
    assert entry["inputs"] == [
        {"name": "input_ids", "dtype": "int64", "shapes": [[2, 4], [3, 9]], "generator": "integers",
         "params": {"high": 10}},
        {"name": "attention_mask", "dtype": "int64", "shapes": [[2, 4], [3, 9]], "generator": "mask", "params": {}}]
    on_disk = json.loads((fake_zoo / "manifest.json").read_text())
    assert on_disk == {"format": 1, "models": entries}
    assert on_disk["models"]["fake_mlp"]["status"] == "not built"


def test_a_failing_recipe_is_recorded_and_does_not_stop_the_others(fake_zoo: Path) -> None:
    entries = build_all(select("fake_broken,fake_mlp"), isolate=False)
    assert entries["fake_broken"]["status"] == "failed"
    assert entries["fake_broken"]["error"].startswith("RuntimeError: the exporter exploded")
    assert entries["fake_broken"]["recipe"] == "a recipe whose exporter fails"
    assert not (fake_zoo / "models" / "fake_broken.onnx").exists()
    assert "the exporter exploded" in (fake_zoo / "logs" / "fake_broken.log").read_text()  # the traceback
    assert entries["fake_mlp"]["status"] == "built"


def test_a_built_model_is_reused_unless_forced(fake_zoo: Path) -> None:
    calls: list[Path] = []

    def recording(path: Path) -> None:
        calls.append(path)
        zoo_fakes.build_mlp(path)

    counted = dataclasses.replace(select("fake_mlp")[0], build=recording)
    first = build_all([counted], isolate=False)["fake_mlp"]
    built = fake_zoo / "models" / "fake_mlp.onnx"
    stamp = built.stat().st_mtime_ns
    again = build_all([counted], isolate=False)["fake_mlp"]
    assert len(calls) == 1 and built.stat().st_mtime_ns == stamp and again == first
    forced = build_all([counted], isolate=False, force=True)["fake_mlp"]
    assert len(calls) == 2 and forced["sha256"] == first["sha256"]


def test_a_changed_recipe_is_rebuilt(fake_zoo: Path) -> None:
    build_all(select("fake_mlp"), isolate=False)
    model = select("fake_mlp")[0]
    changed = dataclasses.replace(model, recipe="another recipe", build=zoo_fakes.build_broken)
    entry = build_all([changed], isolate=False)["fake_mlp"]
    assert entry["status"] == "failed" and entry["recipe"] == "another recipe"
    assert not (fake_zoo / "models" / "fake_mlp.onnx").exists()  # the old recipe's file is not kept


def test_missing_lists_models_never_built_nor_tried(fake_zoo: Path) -> None:
    assert [m.name for m in missing(all_models(), fake_zoo)] == [m.name for m in zoo_fakes.MODELS]
    build_all(select("fake_mlp,fake_broken"), isolate=False)
    assert {m.name for m in missing(all_models(), fake_zoo)} == \
        {m.name for m in zoo_fakes.MODELS} - {"fake_mlp", "fake_broken"}
    (fake_zoo / "models" / "fake_mlp.onnx").unlink()
    assert "fake_mlp" in {m.name for m in missing(all_models(), fake_zoo)}


def test_command_builds_in_child_processes_and_writes_a_deterministic_committed_copy(
        fake_zoo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(HERE))
    committed = tmp_path / "committed" / "manifest.json"
    command = [sys.executable, "-m", "onnxplug_conformance.zoo.build", "--tier", "ci", "--manifest", str(committed)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "1 built, 1 failed: fake_broken" in result.stdout
    first = committed.read_text()
    data = json.loads(first)
    assert data["models"]["fake_mlp"]["status"] == "built" and data["models"]["fake_broken"]["status"] == "failed"
    assert data["models"]["fake_tokens"]["status"] == "not built"  # not of the ci tier
    assert first == (fake_zoo / "manifest.json").read_text()
    assert first == json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"  # sorted keys
    assert str(fake_zoo) not in first and str(tmp_path) not in first
    # a second build reuses the file and writes the same bytes
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0 and committed.read_text() == first


def test_a_recipe_that_kills_its_process_is_a_failure_of_its_own(fake_zoo: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "dying_recipes.py"
    module.write_text(
        "import os\nfrom onnxplug_conformance.zoo.spec import InputSpec, ZooModel\nimport zoo_fakes\n"
        "def die(path):\n    os._exit(3)\n"
        "MODELS = [ZooModel('dies', 'vision', 'onnx', 'exits', 'onnx.helper', 17, zoo_fakes._x(4), die),\n"
        "          *zoo_fakes.MODELS[:1]]\n")
    monkeypatch.setenv("PYTHONPATH", f"{HERE}:{tmp_path}")
    monkeypatch.setenv("ONNXPLUG_ZOO_RECIPES", "dying_recipes")
    monkeypatch.syspath_prepend(str(tmp_path))
    entries = build_all(all_models())
    assert entries["dies"]["status"] == "failed"
    assert entries["dies"]["error"].startswith("ChildProcessError: the recipe's process ended with exit code 3")
    assert entries["fake_mlp"]["status"] == "built"


def test_unknown_model_is_a_usage_error(fake_zoo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--only", "nope"])
    assert info.value.code == 2 and "no zoo model 'nope'" in capsys.readouterr().err


def test_zoo_dir_defaults_to_the_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ONNXPLUG_ZOO_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert manifest.zoo_dir() == tmp_path / "onnxplug" / "zoo"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert manifest.zoo_dir() == Path.home() / ".cache" / "onnxplug" / "zoo"
    monkeypatch.setenv("ONNXPLUG_ZOO_DIR", str(tmp_path / "z"))
    assert manifest.zoo_dir() == tmp_path / "z"


def test_a_file_left_by_a_changed_recipe_is_not_reused(fake_zoo: Path) -> None:
    build_all(select("fake_mlp"), isolate=False)
    calls: list[Path] = []
    counted = dataclasses.replace(select("fake_mlp")[0], recipe="another recipe",
                                  build=lambda path: (calls.append(path), zoo_fakes.build_mlp(path)))
    # the manifest as a build of another model writes it once the recipe module changed
    entries = manifest.load(fake_zoo)
    entries["fake_mlp"] = {**entries["fake_mlp"], "recipe": "another recipe", "status": "not built"}
    manifest.write_file(fake_zoo / "manifest.json", entries)
    assert build_all([counted], isolate=False)["fake_mlp"]["status"] == "built"
    assert len(calls) == 1  # rebuilt, though the old recipe's file was still there
