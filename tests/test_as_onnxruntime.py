"""``python -m onnxplug.as_onnxruntime`` and ``onnxplug exec``: an unmodified onnxruntime client, and
the Python subprocesses it starts, import onnxplug as onnxruntime and get onnxruntime's answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

from onnxplug import as_onnxruntime, errors

from .conftest import make_model

# A client written for onnxruntime: it reports which onnxruntime it got, runs a model, and (unless
# it is the child) starts a copy of itself and reports the child's answer too.
CLIENT = textwrap.dedent('''
    import json, subprocess, sys
    import numpy as np
    import onnxruntime as ort
    from onnxruntime.capi import _pybind_state as C
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument
    from onnxruntime.capi.onnxruntime_inference_collection import InferenceSession

    model, role = sys.argv[1], sys.argv[2]
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    try:
        sess.run(None, {"x": x.astype(np.int64)})
        caught = ""
    except InvalidArgument as e:
        caught = type(e).__name__
    answer = {"file": ort.__file__, "version": ort.__version__, "session": type(sess).__module__,
              "same_class": InferenceSession is ort.InferenceSession, "providers": C.get_available_providers(),
              "y": sess.run(None, {"x": x})[0].tolist(), "caught": caught}
    if role == "parent":
        child = subprocess.run([sys.executable, __file__, model, "child"], capture_output=True, text=True)
        answer["child"] = json.loads(child.stdout.strip().splitlines()[-1]) if child.returncode == 0 else child.stderr
    print(json.dumps(answer))
''')


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = onnx.numpy_helper.from_array(np.arange(20, dtype=np.float32).reshape(4, 5) / 10, "w")
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Tanh", ["m"], ["y"])],
                       [("x", TensorProto.FLOAT, [3, 4])], [("y", TensorProto.FLOAT, [3, 5])], [w])
    path = tmp_path_factory.mktemp("model") / "model.onnx"
    onnx.save_model(model, path)
    return path


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("client") / "client_app.py"
    path.write_text(CLIENT)
    return path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["ONNXPLUG_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the default provider answers; faster start
    return env


def _answer(command: list[str], cwd: Path | None = None) -> dict:
    done = subprocess.run(command, capture_output=True, text=True, env=_env(), cwd=cwd, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _expected(model_path: Path) -> list:
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    return onnxruntime.InferenceSession(str(model_path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _check_onnxplug(answer: dict, expected: np.ndarray) -> None:
    assert Path(answer["file"]).resolve().is_relative_to(Path(as_onnxruntime.shim_path()).resolve())
    assert answer["session"].split(".")[0] == "onnxplug" and answer["same_class"]
    assert answer["version"].endswith("+onnxplug.0.1.0") and answer["version"].startswith(onnxruntime.__version__)
    assert answer["providers"][-1] == "numpy"
    assert answer["caught"] == "InputTypeError"  # caught by the client's `except InvalidArgument`
    np.testing.assert_allclose(np.array(answer["y"], np.float32), expected, rtol=1e-5, atol=1e-6)


def test_script_and_its_subprocess_run_on_onnxplug(client: Path, model_path: Path) -> None:
    answer = _answer([sys.executable, "-m", "onnxplug.as_onnxruntime", str(client), str(model_path), "parent"])
    expected = _expected(model_path)
    _check_onnxplug(answer, expected)
    assert isinstance(answer["child"], dict), answer["child"]
    _check_onnxplug(answer["child"], expected)


def test_without_it_the_client_gets_onnxruntime(client: Path, model_path: Path) -> None:
    answer = _answer([sys.executable, str(client), str(model_path), "child"])
    assert answer["file"] == onnxruntime.__file__ and answer["version"] == onnxruntime.__version__
    assert answer["caught"] == "InvalidArgument"
    np.testing.assert_allclose(np.array(answer["y"], np.float32), _expected(model_path), rtol=1e-6)


def test_module_form(client: Path, model_path: Path) -> None:
    answer = _answer([sys.executable, "-m", "onnxplug.as_onnxruntime", "-m", "client_app", str(model_path), "child"],
                     cwd=client.parent)
    _check_onnxplug(answer, _expected(model_path))


def test_onnxplug_exec(client: Path, model_path: Path) -> None:
    onnxplug_command = shutil.which("onnxplug", path=os.path.dirname(sys.executable)) or shutil.which("onnxplug")
    if onnxplug_command is None:
        pytest.skip("the onnxplug console script is not installed next to this Python")
    answer = _answer([onnxplug_command, "exec", "--", sys.executable, str(client), str(model_path), "parent"])
    expected = _expected(model_path)
    _check_onnxplug(answer, expected)
    _check_onnxplug(answer["child"], expected)


def test_exit_status_and_arguments_pass_through(tmp_path: Path) -> None:
    script = tmp_path / "exit.py"
    script.write_text("import sys, onnxruntime\nprint(sys.argv[1:])\nsys.exit(int(sys.argv[1]))\n")
    done = subprocess.run([sys.executable, "-m", "onnxplug.as_onnxruntime", str(script), "3", "--flag"],
                          capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 3 and done.stdout.strip() == "['3', '--flag']"
    usage = subprocess.run([sys.executable, "-m", "onnxplug.as_onnxruntime"], capture_output=True, text=True,
                           env=_env(), timeout=300)
    assert usage.returncode == 2 and "usage" in usage.stderr


@pytest.mark.parametrize("module", ["onnxruntime.quantization", "onnxruntime.transformers", "onnxruntime.tools"])
def test_onnxruntimes_tools_are_refused_by_name(module: str) -> None:
    code = (f"import onnxplug.errors as e\ntry:\n    import {module}\nexcept ImportError as x:\n"
            f"    print(type(x).__name__, isinstance(x, e.OnnxplugError), str(x))\n")
    done = subprocess.run([sys.executable, "-m", "onnxplug.as_onnxruntime", "-c", code], capture_output=True,
                          text=True, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"UnsupportedModuleError True {module} is one of onnxruntime's own Python tools")


def test_install_in_a_fresh_interpreter(model_path: Path) -> None:
    code = ("import onnxplug.as_onnxruntime as a; a.install(); "
            "import onnxruntime, onnxruntime.capi._pybind_state as C, onnxplug.capi._pybind_state as P; "
            "print(onnxruntime.__file__, C is P, a.is_installed())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    file, same, installed = done.stdout.split()
    assert file.startswith(as_onnxruntime.shim_path()) and same == "True" and installed == "True"


def test_install_refuses_when_onnxruntime_is_already_imported() -> None:
    path = list(sys.path)
    with pytest.raises(errors.UnsupportedModuleError, match="already imported"):
        as_onnxruntime.install()
    assert sys.path == path and not as_onnxruntime.is_installed()


def test_environment_puts_the_shim_first_once() -> None:
    env = as_onnxruntime.environment({"PYTHONPATH": os.pathsep.join(["/a", as_onnxruntime.shim_path(), "/b"])})
    assert env["PYTHONPATH"].split(os.pathsep) == [as_onnxruntime.shim_path(), "/a", "/b"]


def test_onnxplug_exec_without_a_command_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    from onnxplug.cli import main

    assert main(["exec"]) == 1 and main(["exec", "--"]) == 1
    assert "name a command to run, e.g. onnxplug exec -- python app.py" in capsys.readouterr().err
