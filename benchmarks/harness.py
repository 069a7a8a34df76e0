"""Interleaved latency measurement shared by the benchmark scripts.

Engines run in alternating *blocks* of runs with a 0.3 s pause between blocks: thread pools that spin
after a call (OpenBLAS, onnxruntime, numba) would otherwise slow whichever engine runs next.
Results are medians and ratios against onnxruntime; the machines are shared and noisy.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import onnx

PAUSE_S = 0.3


def machine_description() -> str:
    """The CPU, numpy and its BLAS as the ratios depend on them: numpy's OpenBLAS picks its kernels
    by CPU unless ``OPENBLAS_CORETYPE`` names one (docs/benchmarks.md: on the AVX-512 machines
    the environment's ``Haswell`` halves its per-thread rate)."""
    import threadpoolctl

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    from onnxplug.providers.numpy.runtime.threaded_blas import is_threaded_blas_file, threaded_blas

    threaded = threaded_blas()
    own = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"
           and not is_threaded_blas_file(i.get("filepath", ""))]
    blas = own[0] if own else {}
    kernels = blas.get("architecture", "?")
    forced = os.environ.get("OPENBLAS_CORETYPE")
    return (f"{cpu}, {os.cpu_count()} CPUs; numpy {np.__version__} with {blas.get('internal_api', '?')} "
            f"{blas.get('version', '?')} ({kernels} kernels"
            f"{', OPENBLAS_CORETYPE=' + forced if forced else ', chosen by CPU'}); threaded BLAS: "
            f"{threaded.describe() if threaded is not None else 'off'}")


@dataclass
class Timing:
    """Median latency of one engine on one model and batch, with its spread."""

    engine: str
    median_ms: float
    p25_ms: float
    p75_ms: float
    runs: int


def onnxruntime_runner(model: onnx.ModelProto, threads: int = 2,
                       level: str = "ORT_ENABLE_ALL") -> Callable[[Mapping[str, np.ndarray]], object]:
    """onnxruntime CPU with ``threads`` intra-op threads, as the oracle engine."""
    import onnxruntime

    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, level)
    sess = onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return lambda feeds: sess.run(None, dict(feeds))


def onnxplug_runner(model: onnx.ModelProto, providers: Sequence[str], threads: int = 2,
                    level: int | None = None) -> Callable[[Mapping[str, np.ndarray]], object]:
    """An onnxplug session on ``providers``."""
    import onnxplug

    so = onnxplug.SessionOptions()
    so.intra_op_num_threads = threads
    if level is not None:
        so.graph_optimization_level = level
    sess = onnxplug.InferenceSession(model, so, providers=list(providers))
    return lambda feeds: sess.run(None, dict(feeds))


def interleaved(engines: Mapping[str, Callable[[Mapping[str, np.ndarray]], object]],
                feeds: Mapping[str, np.ndarray], *, blocks: int = 7, block_runs: int = 5,
                warmup: int = 2, min_block_s: float = 0.0) -> dict[str, Timing]:
    """Time each engine in alternating blocks of ``block_runs`` runs, pausing between blocks."""
    for run in engines.values():
        for _ in range(warmup):
            run(feeds)
    samples: dict[str, list[float]] = {name: [] for name in engines}
    names = list(engines)
    for b in range(blocks):
        order = names if b % 2 == 0 else names[::-1]
        for name in order:
            run = engines[name]
            start = time.perf_counter()
            n = 0
            while n < block_runs or time.perf_counter() - start < min_block_s:
                t0 = time.perf_counter()
                run(feeds)
                samples[name].append(time.perf_counter() - t0)
                n += 1
            time.sleep(PAUSE_S)
    out = {}
    for name, xs in samples.items():
        q = np.percentile(xs, [25, 50, 75]) * 1e3
        out[name] = Timing(name, float(q[1]), float(q[0]), float(q[2]), len(xs))
    return out


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of positive values."""
    return math.exp(statistics.fmean(math.log(v) for v in values))


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
