"""GPU tests: the real provider on a real CUDA device through CuPy.

Every test here is skipped, with CuPy's own reason, when CuPy reports no usable device (as on
the machines this package was written on: nothing here has run yet). A GPU owner runs:

    python -m pytest plugins/cupy/tests -m gpu -v
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import onnxplug as ort
from onnxplug.errors import OnnxplugError
from onnxplug.io_binding import IOBinding
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs

from cupy_test_support import assert_close, node_model, onnxruntime_outputs, requires_gpu, session
from onnxplug_cupy.codegen.elementwise import generate
from onnxplug_cupy.options import CupyOptionError

pytestmark = [pytest.mark.gpu, requires_gpu]


def _cupy():
    import cupy

    return cupy


# --- the suites --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_suite(name: str) -> None:
    model = build(name)
    feeds = sample_inputs(name, batch=2)
    sess = ort.InferenceSession(model, providers=["cupy"])
    assigned = Counter(a.provider for a in sess.get_node_assignments())
    assert assigned["cupy"] > 0, assigned
    assert_close(sess.run(None, {k: v.copy() for k, v in feeds.items()}), onnxruntime_outputs(model, feeds),
                 rtol=1e-3, atol=1e-4)


def test_conformance_suite(tmp_path: Path) -> None:
    report = tmp_path / "conformance-cupy.json"
    result = subprocess.run([sys.executable, "-m", "onnxplug_conformance.cli", "cupy", "--json", str(report),
                             "--table", "summary"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert report.exists()


def test_nvrtc_compiles_every_generated_op() -> None:
    from test_codegen import one_step_programs

    from onnxplug_cupy.provider import CupyProvider

    backend = CupyProvider().backend
    for program in one_step_programs():
        source = generate(program, 2)
        kernels = backend.compile(source.source, [source.flat, source.strided], program.describe())
        assert set(kernels) == {source.flat, source.strided}


# --- memory, streams, devices --------------------------------------------------------------------

def _relu_chain():
    x = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    model = node_model("Relu", {"x": x})
    return model, x


def test_values_between_nodes_are_cupy_arrays_and_outputs_numpy() -> None:
    cupy = _cupy()
    model = build("resnet18")
    sess = ort.InferenceSession(model, providers=["cupy"])
    seen: list[type] = []
    for step in sess.engine.plan.steps:
        if step.kind != "copy":
            original = step.kernel.compute
            step.kernel.compute = lambda *a, _o=original: (seen.extend(type(v) for v in a if v is not None), _o(*a))[1]
    out = sess.run(None, sample_inputs("resnet18", batch=1))[0]
    assert isinstance(out, np.ndarray)
    assert seen and all(t is cupy.ndarray for t in seen)
    assert sess.engine.plan.copy_count == 2


def test_memory_comes_from_cupys_pool() -> None:
    cupy = _cupy()
    model, x = _relu_chain()
    sess = session(model, "cupy")
    provider = sess.engine.providers[0]
    assert provider.backend.pool is cupy.get_default_memory_pool()
    sess.run(None, {"x": x})
    assert provider.backend.pool.total_bytes() >= x.nbytes

    limited = session(model, "cupy", gpu_mem_limit=64 * 2**20)
    pool = limited.engine.providers[0].backend.pool
    assert pool is not cupy.get_default_memory_pool() and pool.get_limit() == 64 * 2**20
    np.testing.assert_array_equal(limited.run(None, {"x": x})[0], np.maximum(x, 0))
    assert pool.total_bytes() > 0


def test_a_memory_limit_too_small_fails_with_a_typed_error() -> None:
    x = np.ones((1024, 1024), np.float32)
    sess = session(node_model("Relu", {"x": x}), "cupy", gpu_mem_limit=1024)
    with pytest.raises(OnnxplugError, match="OutOfMemory|out of memory"):
        sess.run(None, {"x": x})


def test_each_thread_runs_on_its_own_stream_and_results_agree() -> None:
    cupy = _cupy()
    model = build("transformer_encoder")
    sess = ort.InferenceSession(model, providers=["cupy"])
    backend = sess.engine.providers[0].backend
    feeds = [sample_inputs("transformer_encoder", batch=2, seed=s) for s in range(4)]
    expected = [sess.run(None, f)[0] for f in feeds]
    results: dict[int, np.ndarray] = {}
    streams: dict[int, int] = {}

    def worker(i: int) -> None:
        for _ in range(3):
            results[i] = sess.run(None, feeds[i])[0]
        streams[i] = backend.stream().ptr

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        np.testing.assert_allclose(results[i], expected[i], rtol=1e-5, atol=1e-5)
    assert len(set(streams.values())) == 4 and 0 not in streams.values()  # never the legacy default stream
    assert cupy.cuda.get_current_stream().ptr == 0  # the caller's current stream was left alone


def test_device_id_that_does_not_exist_is_refused_by_name() -> None:
    cupy = _cupy()
    model, _ = _relu_chain()
    with pytest.raises(CupyOptionError, match="device_id"):
        session(model, "cupy", device_id=cupy.cuda.runtime.getDeviceCount())


# --- IOBinding ------------------------------------------------------------------------------------

def test_iobinding_with_cupy_arrays_makes_no_host_copies() -> None:
    cupy = _cupy()
    model = build("resnet18")
    feeds = sample_inputs("resnet18", batch=1)
    sess = ort.InferenceSession(model, providers=["cupy"])
    transfer = sess.engine.providers[0].data_transfer
    calls = Counter()
    for name in ("to_host", "to_device"):
        original = getattr(transfer, name)
        setattr(transfer, name, lambda v, _o=original, _n=name: (calls.update([_n]), _o(v))[1])
    binding = IOBinding(sess)
    (input_name,) = feeds
    binding.bind_input(input_name, cupy.asarray(feeds[input_name]))
    output_name = sess.get_outputs()[0].name
    binding.bind_output(output_name, "cuda", 0)
    binding.run()
    (y,) = binding.get_outputs()
    assert y.device_name() == "cuda" and isinstance(y.value(), cupy.ndarray)
    assert calls == Counter()
    assert_close([cupy.asnumpy(y.value())], onnxruntime_outputs(model, feeds), rtol=1e-3, atol=1e-4)


def test_iobinding_takes_dlpack_cuda_array_interface_and_raw_pointers() -> None:
    cupy = _cupy()
    model, x = _relu_chain()
    sess = session(model, "cupy")
    device_x = cupy.asarray(x)

    class InterfaceOnly:  # exposes only __cuda_array_interface__, as Numba or PyTorch tensors do
        def __init__(self, array):
            self.__cuda_array_interface__ = array.__cuda_array_interface__
            self._keep = array

    for bound in (InterfaceOnly(device_x), cupy.from_dlpack(device_x)):
        binding = IOBinding(sess)
        binding.bind_input("x", bound)
        binding.bind_output("y0", "cuda", 0)
        binding.run()
        np.testing.assert_array_equal(binding.get_outputs()[0].numpy(), np.maximum(x, 0))

    out = cupy.empty_like(device_x)
    binding = IOBinding(sess)
    binding.bind_input("x", "cuda", 0, np.float32, x.shape, device_x.data.ptr)
    binding.bind_output("y0", "cuda", 0, np.float32, x.shape, out.data.ptr)
    binding.run()
    np.testing.assert_array_equal(cupy.asnumpy(out), np.maximum(x, 0))


def test_cuda_ortvalues_share_device_memory_with_cupy() -> None:
    cupy = _cupy()
    model, x = _relu_chain()
    sess = session(model, "cupy")
    value = ort.OrtValue.ortvalue_from_numpy(x, "cuda", 0)
    assert value.device_name() == "cuda" and isinstance(value.value(), cupy.ndarray)
    assert (value.shape(), value.data_type()) == (list(x.shape), "tensor(float)")
    assert value.data_ptr() == value.value().data.ptr
    assert cupy.asarray(value).data.ptr == value.data_ptr()  # __cuda_array_interface__, no copy
    np.testing.assert_array_equal(value.numpy(), x)
    value.update_inplace(-x)
    np.testing.assert_array_equal(cupy.asnumpy(value.value()), -x)
    target = ort.OrtValue.ortvalue_from_shape_and_type(list(x.shape), np.float32, "cuda", 0)
    binding = sess.io_binding()
    binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy(x, "cuda", 0))
    binding.bind_ortvalue_output("y0", target)
    sess.run_with_iobinding(binding)
    assert binding.get_outputs()[0].data_ptr() == target.data_ptr()
    np.testing.assert_array_equal(target.numpy(), np.maximum(x, 0))
    from_dlpack = ort.OrtValue.from_dlpack(cupy.asarray(x))
    assert from_dlpack.device_name() == "cuda"
    np.testing.assert_array_equal(sess.run_with_ort_values(["y0"], {"x": from_dlpack})[0].numpy(), np.maximum(x, 0))
