"""docs/write-a-provider.md runs: its ``python file=PATH`` blocks are written, its ``python test`` blocks executed.

Blocks run in document order in a scratch folder, inside a throwaway virtual environment layered over
the current one (so ``pip install`` there leaves this environment untouched). Every ``python`` block
must be marked, so no example can silently rot.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Iterator

import pytest

from onnxplug.plugins import get_catalog

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "write-a-provider.md"
_FENCE = re.compile(r"^```python(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.M | re.S)
#: Console scripts of this environment, re-created in the throwaway one (entry module, function).
_SCRIPTS = {"pip": ("pip._internal.cli.main", "main"), "onnxplug": ("onnxplug.cli", "main"),
            "onnxplug-sdk": ("onnxplug_sdk.cli", "main")}


@dataclass
class Block:
    """One fenced python block of the tutorial."""

    line: int
    kind: str  # "test" or "file"
    body: str
    path: str = ""
    requires: str = ""


def tutorial_blocks(text: str) -> list[Block]:
    """The tutorial's python blocks in order; unmarked ones are an error."""
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        words = match["info"].split()
        options = dict(w.split("=", 1) for w in words if "=" in w)
        if "test" in words:
            blocks.append(Block(line, "test", match["body"], requires=options.get("requires", "")))
        elif "file" in options:
            blocks.append(Block(line, "file", match["body"], path=options["file"]))
        else:
            raise AssertionError(f"{TUTORIAL.name}:{line}: python block is neither 'test' nor 'file=PATH'")
    return blocks


def _make_venv(root: Path) -> Path:
    """A venv without pip whose site-packages also loads this environment's (``.pth`` with addsitedir)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=300)
    python = root / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    here = sysconfig.get_paths()["purelib"]
    Path(purelib, "_outer_environment.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    for name, (module, function) in _SCRIPTS.items():
        script = root / "bin" / name
        script.write_text(f"#!{python}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return root


@pytest.fixture(scope="module")
def tutorial_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Scratch folder, activated throwaway venv and the namespace the test blocks share."""
    root = tmp_path_factory.mktemp("tutorial")
    venv = _make_venv(root / "venv")
    work = root / "work"
    work.mkdir()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    catalog = get_catalog()
    saved_providers = dict(catalog.providers), dict(catalog.owner)
    os.environ["PATH"] = f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"
    os.environ["VIRTUAL_ENV"] = str(venv)
    os.environ.pop("PYTHONPATH", None)
    os.environ["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    os.chdir(work)
    try:
        yield {"namespace": {"__name__": "tutorial"}, "work": work, "done": set()}
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        catalog.providers.clear()
        catalog.providers.update(saved_providers[0])
        catalog.owner.clear()
        catalog.owner.update(saved_providers[1])


def _run(block: Block, env: dict[str, Any]) -> None:
    if block.kind == "file":
        path = env["work"] / block.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.body)
    else:
        code = compile(block.body, f"{TUTORIAL.name}:{block.line}", "exec")
        exec(code, env["namespace"])  # noqa: S102  (running the documentation is the point)
    env["done"].add(block.line)


def _available(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def test_every_python_block_is_marked() -> None:
    blocks = tutorial_blocks(TUTORIAL.read_text())
    assert sum(b.kind == "test" for b in blocks) >= 6 and sum(b.kind == "file" for b in blocks) >= 5


def test_tutorial_runs_in_order(tutorial_env: dict[str, Any]) -> None:
    for block in tutorial_blocks(TUTORIAL.read_text()):
        if block.requires:
            continue  # steps needing optional packages run in the next test
        _run(block, tutorial_env)
    assert (tutorial_env["work"] / "mycpu" / "src" / "onnxplug_mycpu" / "ops" / "op_sigmoid.py").exists()


def test_tutorial_conformance_step(tutorial_env: dict[str, Any]) -> None:
    blocks = tutorial_blocks(TUTORIAL.read_text())
    optional = [b for b in blocks if b.requires]
    assert optional, "the tutorial has a conformance step"
    missing = sorted({b.requires for b in optional if not _available(b.requires)})
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    if not all(b.line in tutorial_env["done"] for b in blocks if not b.requires):
        pytest.skip("the main tutorial did not run to the end")
    for block in optional:
        _run(block, tutorial_env)
