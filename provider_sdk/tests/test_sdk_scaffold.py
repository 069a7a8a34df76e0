"""``onnxplug-sdk new``: the package it writes installs with pip, is listed, runs, and imports only the SDK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_no_core_internals import core_imports

from onnxplug_sdk.cli import main
from onnxplug_sdk.scaffold import ScaffoldError, check_name, new_provider

SCRIPTS = Path(sys.executable).parent


def _run(args: list[str], pythonpath: Path, cwd: Path | None = None,
         **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pythonpath), os.environ.get("PYTHONPATH", "")]),
           **extra_env}
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The scaffold of provider 'scaffolded_demo', pip-installed into a private folder (not the venv)."""
    root = tmp_path_factory.mktemp("scaffold")
    assert main(["new", "scaffolded_demo", "--dir", str(root / "pkg")]) == 0
    target = root / "site"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                             "--no-input", "--disable-pip-version-check", "--target", str(target),
                             str(root / "pkg")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return root / "pkg", target


def test_writes_the_expected_files(installed: tuple[Path, Path]) -> None:
    package, _ = installed
    files = sorted(str(p.relative_to(package)) for p in package.rglob("*")
                   if p.is_file() and "egg-info" not in str(p) and "build" not in p.parts)
    assert files == ["README.md", "pyproject.toml", "src/onnxplug_scaffolded_demo/__init__.py",
                     "src/onnxplug_scaffolded_demo/ops/__init__.py", "src/onnxplug_scaffolded_demo/ops/op_relu.py",
                     "src/onnxplug_scaffolded_demo/plugin.py", "src/onnxplug_scaffolded_demo/provider.py",
                     "src/onnxplug_scaffolded_demo/py.typed", "tests/test_conformance.py",
                     "tests/test_scaffolded_demo.py"]
    pyproject = (package / "pyproject.toml").read_text()
    assert '[project.entry-points."onnxplug.providers"]\nscaffolded_demo = "onnxplug_scaffolded_demo.plugin"' in pyproject
    assert "class ScaffoldedDemoProvider(KernelRegistryProvider):" in \
        (package / "src/onnxplug_scaffolded_demo/provider.py").read_text()
    assert "onnxplug conformance scaffolded_demo" in (package / "README.md").read_text()
    assert '"conformance", "scaffolded_demo"' in (package / "tests/test_conformance.py").read_text()


def test_generated_sources_import_only_the_sdk(installed: tuple[Path, Path]) -> None:
    package, _ = installed
    sources = sorted((package / "src").rglob("*.py"))
    assert len(sources) == 5
    assert {str(p.name): core_imports(p) for p in sources} == {p.name: [] for p in sources}


def test_onnxplug_providers_lists_the_installed_provider(installed: tuple[Path, Path]) -> None:
    _, site = installed
    assert (site / "onnxplug_scaffolded_demo-0.1.0.dist-info" / "entry_points.txt").exists()
    result = _run([str(SCRIPTS / "onnxplug"), "providers"], site)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    (line,) = [line for line in lines if line.split()[:1] == ["scaffolded_demo"]]
    assert line.split()[1:4] == ["0.1.0", "yes", "cpu"]
    assert not [line for line in lines if "scaffolded_demo" in line and ("refused" in line or "failed" in line)]


def test_the_generated_tests_pass(installed: tuple[Path, Path]) -> None:
    package, site = installed
    # Only this plugin (and the core's own): other installed providers are not what is tested here.
    result = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], site, cwd=package,
                  ONNXPLUG_PLUGINS="scaffolded_demo")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout


def test_the_console_script_exists_and_reports_errors(tmp_path: Path) -> None:
    script = SCRIPTS / "onnxplug-sdk"
    assert script.exists()
    result = subprocess.run([str(script), "new", "Bad-Name", "--dir", str(tmp_path / "x")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "provider name 'Bad-Name' must be lower case" in result.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("name", ["", "1gpu", "my-gpu", "MyGpu", "class", "gpu!"])
def test_unusable_names_are_refused(name: str) -> None:
    with pytest.raises(ScaffoldError, match="must be lower case letters"):
        check_name(name)


def test_names_derived_from_the_provider_name() -> None:
    names = check_name("my_gpu2")
    assert (names.distribution, names.package, names.class_name) == ("onnxplug-my-gpu2", "onnxplug_my_gpu2",
                                                                     "MyGpu2Provider")


def test_a_non_empty_target_is_refused(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(ScaffoldError, match="already exists and is not an empty folder"):
        new_provider("demo", tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert len(new_provider("demo", empty)) == 10
