"""Benchmarks of the cupy (CUDA) provider. Needs an NVIDIA GPU; without one it prints CuPy's reason
and exits with status 2 (nothing is measured on a stand-in).

    python benchmarks/bench_cupy.py                       # model suite, batch 1 and 8
    python benchmarks/bench_cupy.py --models resnet18 --batch 1 32 --iobinding
    python benchmarks/bench_cupy.py --gemm                # cuBLAS GEMM through cupy.matmul only

Engines: onnxruntime CPU (2 threads), onnxplug ``cupy`` end to end, with ``--iobinding`` also with
inputs and outputs bound on the device, and onnxruntime's CUDA provider when onnxruntime-gpu is
installed. Medians of interleaved blocks; session creation (NVRTC compilation) is reported apart.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from typing import Any, Callable, Mapping

import numpy as np

from harness import geomean, interleaved, markdown_table, onnxruntime_runner
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs


def _unavailable() -> str:
    from onnxplug_cupy.provider import CupyProvider

    availability = CupyProvider.availability()
    return "" if availability else availability.reason


def cupy_runner(model: Any, iobinding: bool) -> tuple[Callable[[Mapping[str, np.ndarray]], object], float]:
    """An onnxplug session on ``cupy`` and how long it took to create (compiling its kernels)."""
    import cupy

    import onnxplug
    from onnxplug.io_binding import IOBinding

    t0 = time.perf_counter()
    session = onnxplug.InferenceSession(model, providers=["cupy"])
    created = time.perf_counter() - t0
    if not iobinding:
        return (lambda feeds: session.run(None, dict(feeds))), created
    outputs = [o.name for o in session.get_outputs()]
    device_feeds: dict[int, dict[str, Any]] = {}

    def run(feeds: Mapping[str, np.ndarray]) -> object:
        bound = device_feeds.setdefault(id(feeds), {k: cupy.asarray(v) for k, v in feeds.items()})
        binding = IOBinding(session)
        for name, value in bound.items():
            binding.bind_input(name, value)
        for name in outputs:
            binding.bind_output(name, "cuda", 0)
        binding.run()  # synchronises the stream before returning
        return [value.value() for value in binding.get_outputs()]  # the cupy arrays, left on the GPU

    return run, created


def onnxruntime_cuda_runner(model: Any) -> Callable[[Mapping[str, np.ndarray]], object] | None:
    """onnxruntime-gpu's CUDA provider, when installed and usable."""
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        return None
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CUDAExecutionProvider"])
    return lambda feeds: session.run(None, dict(feeds))


def bench_models(args: argparse.Namespace) -> None:
    rows, ratios = [], []
    for name in args.models:
        model = build(name)
        for batch in args.batch:
            feeds = sample_inputs(name, batch=batch)
            engines: dict[str, Callable[[Mapping[str, np.ndarray]], object]] = {
                "onnxruntime cpu": onnxruntime_runner(model, args.threads)}
            engines["cupy"], created = cupy_runner(model, iobinding=False)
            if args.iobinding:
                engines["cupy iobinding"], _ = cupy_runner(model, iobinding=True)
            ort_cuda = onnxruntime_cuda_runner(model)
            if ort_cuda is not None:
                engines["onnxruntime cuda"] = ort_cuda
            t = interleaved(engines, feeds, blocks=args.blocks, block_runs=args.block_runs)
            ratio = t["cupy"].median_ms / t["onnxruntime cpu"].median_ms
            ratios.append(ratio)
            row = [name, batch, f"{created * 1e3:.0f}", f"{t['onnxruntime cpu'].median_ms:.2f}",
                   f"{t['cupy'].median_ms:.2f}", f"{ratio:.2f}",
                   f"{t['cupy iobinding'].median_ms:.2f}" if "cupy iobinding" in t else "-",
                   f"{t['onnxruntime cuda'].median_ms:.2f}" if "onnxruntime cuda" in t else "-"]
            rows.append(row)
            print(f"{name} batch {batch}: cupy / onnxruntime cpu {ratio:.2f}", file=sys.stderr, flush=True)
    print(markdown_table(["model", "batch", "cupy session ms", "onnxruntime cpu ms", "cupy ms",
                          "cupy / ort cpu", "cupy iobinding ms", "onnxruntime cuda ms"], rows))
    print(f"\ngeomean ratio cupy / onnxruntime cpu: {geomean(ratios):.2f}")


def bench_gemm(sizes: list[int], repeat: int) -> None:
    import cupy

    rows = []
    for n in sizes:
        a = cupy.random.random((n, n), dtype=cupy.float32)
        b = cupy.random.random((n, n), dtype=cupy.float32)
        for _ in range(3):
            cupy.matmul(a, b)
        cupy.cuda.get_current_stream().synchronize()
        times = []
        for _ in range(repeat):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            cupy.matmul(a, b)
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
        seconds = float(np.median(times))
        rows.append([n, f"{seconds * 1e3:.3f}", f"{2 * n ** 3 / seconds / 1e9:.0f}"])
    print(markdown_table(["size", "cupy.matmul ms (median)", "GFLOP/s"], rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=[m for m in MODEL_NAMES])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--iobinding", action="store_true", help="also time device-bound inputs and outputs")
    parser.add_argument("--gemm", action="store_true", help="only the cuBLAS GEMM table")
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=7)
    parser.add_argument("--block-runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime CPU threads")
    args = parser.parse_args(argv)
    reason = _unavailable()
    if reason:
        print(f"bench_cupy: the cupy provider is not available here: {reason}", file=sys.stderr)
        return 2
    import cupy

    device = cupy.cuda.runtime.getDeviceProperties(0)
    print(f"machine: {platform.processor() or platform.machine()}, GPU {device['name'].decode()}, "
          f"CuPy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}")
    if args.gemm:
        bench_gemm(args.sizes, args.repeat)
        return 0
    bench_models(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
