"""Benchmarks of the OpenCL provider: GEMM GFLOP/s against NumPy's BLAS, and model latency against
onnxruntime's CPU provider (2 threads) and, when installed, onnxplug's numba provider.

    python benchmarks/bench_opencl.py                 # everything, markdown tables on stdout
    python benchmarks/bench_opencl.py --gemm          # only the GEMM table
    python benchmarks/bench_opencl.py --models resnet18 mobilenetv2 --repeat 20
    python benchmarks/bench_opencl.py --write         # also replace the OpenCL section of docs/benchmarks.md
    python benchmarks/bench_opencl.py --profile resnet18   # device time per kernel (profiling events)

Medians of ``--repeat`` runs after warm-up. GEMM operands live on the device (timed up to
``queue.finish()``, without transfers); model latencies are end to end (host in, host out).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np


def _interleaved(fns: dict[str, Callable[[], object]], repeat: int, warmup: int = 2,
                 cpu: dict[str, list[float]] | None = None, rounds: int = 3) -> dict[str, list[float]]:
    """Seconds per call of each function. Calls run in blocks, the functions taking turns over
    ``rounds`` rounds so that all see the same background load (the machine may be shared); a
    pause after each block lets the previous engine's spinning worker threads (OpenBLAS,
    onnxruntime, PoCL) go idle instead of competing with the next one. ``cpu``, when given,
    receives the process CPU seconds of each call (all threads)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    per_round = max(1, -(-repeat // rounds))
    for _ in range(rounds):
        for name, fn in fns.items():
            for _ in range(warmup):
                fn()
            for _ in range(per_round):
                c0, t0 = time.process_time(), time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
                if cpu is not None:
                    cpu.setdefault(name, []).append(time.process_time() - c0)
            time.sleep(0.3)
    return times


def _cell(times: list[float], scale: float, fmt: str = "{:.1f}") -> str:
    """``median (best)`` of ``scale / t`` or ``t * scale``."""
    return f"{fmt.format(scale(statistics.median(times)))} ({fmt.format(scale(min(times)))})"  # type: ignore[operator]


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) / {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def bench_gemm(sizes: list[int], repeat: int) -> list[str]:
    """Markdown rows: size, OpenCL GFLOP/s, NumPy GFLOP/s, ratio."""
    import onnxplug_opencl
    from onnxplug_opencl.engine.gemm import Operand, gemm, pick_tiles

    rt = onnxplug_opencl.cl_runtime()
    rows = [f"GEMM on {rt.entry.name}, float32, operands on the device; median (best) of "
            f"{repeat} runs in alternating blocks ({_load()})", "",
            "| size | OpenCL GFLOP/s | NumPy (BLAS) GFLOP/s | OpenCL / NumPy (medians) "
            "| OpenCL / NumPy GFLOP per CPU-second | tile |",
            "|---|---|---|---|---|---|"]
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        da, db, dc = rt.to_device(a), rt.to_device(b), rt.empty((n, n), np.float32)

        def run_cl() -> None:
            gemm(rt, n, n, n, Operand(da, 0, n), Operand(db, 0, n), Operand(dc, 0, n))
            rt.queue.finish()

        run_cl()
        np.testing.assert_allclose(dc.get(), a @ b, rtol=1e-3)
        flops = 2.0 * n ** 3
        cpu: dict[str, list[float]] = {}
        t = _interleaved({"cl": run_cl, "np": lambda: a @ b}, repeat, cpu=cpu)
        rate = lambda s: flops / s / 1e9  # noqa: E731
        cfg = pick_tiles(rt, n, n, 1)
        ratio = statistics.median(t["np"]) / statistics.median(t["cl"])
        per_cpu = f"{rate(statistics.median(cpu['cl'])):.1f} / {rate(statistics.median(cpu['np'])):.1f}"
        rows.append(f"| {n}³ | {_cell(t['cl'], rate)} | {_cell(t['np'], rate)} | {ratio:.2f} | {per_cpu} | "
                    f"{cfg.tm}x{cfg.tn * cfg.nt}x{cfg.kc} |")
    return rows


def bench_models(names: list[str], repeat: int) -> list[str]:
    """Markdown rows: model, onnxruntime ms, OpenCL ms, ratio, numba ms."""
    import onnxruntime

    import onnxplug as ort
    from onnxplug.testing.model_suite import build, sample_inputs

    available = ort.get_available_providers()
    rows = [f"Model latency in ms, batch 1, median (best) of {repeat} runs in alternating blocks of about 4 "
            f"({_load()})", "",
            "| model | onnxruntime CPU (2 threads) | opencl | opencl / onnxruntime (medians) | numba |",
            "|---|---|---|---|---|"]
    for name in names:
        model = build(name).SerializeToString()
        feeds = sample_inputs(name)
        so = onnxruntime.SessionOptions()
        so.intra_op_num_threads = 2
        ref = onnxruntime.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        cl = ort.InferenceSession(model, providers=["opencl"])
        fns: dict[str, Callable[[], object]] = {"ort": lambda: ref.run(None, feeds), "cl": lambda: cl.run(None, feeds)}
        if "numba" in available:
            nb = ort.InferenceSession(model, providers=["numba"])
            fns["numba"] = lambda: nb.run(None, feeds)
        # Blocks of about 4 runs: a burst of other work on the shared machine then lands on every
        # engine alike instead of on one engine's only block.
        t = _interleaved(fns, repeat, rounds=max(3, repeat // 4))
        ms = lambda s: s * 1e3  # noqa: E731
        ratio = statistics.median(t["cl"]) / statistics.median(t["ort"])
        numba = _cell(t["numba"], ms) if "numba" in t else "n/a (not installed)"
        rows.append(f"| {name} | {_cell(t['ort'], ms)} | {_cell(t['cl'], ms)} | {ratio:.2f} | {numba} |")
    return rows


def profile_model(name: str, repeat: int) -> list[str]:
    """Markdown rows: device ms per run of each kernel launch label, from OpenCL profiling events.
    Needs ONNXPLUG_OPENCL_PROFILE=1 before the runtime exists (``main`` sets it for ``--profile``)."""
    import onnxplug as ort
    import onnxplug_opencl
    from onnxplug.testing.model_suite import build, sample_inputs
    from onnxplug_opencl.runtime import profiling

    rt = onnxplug_opencl.cl_runtime()
    model = build(name).SerializeToString()
    feeds = sample_inputs(name)
    session = ort.InferenceSession(model, providers=["opencl"])
    for _ in range(3):
        session.run(None, feeds)
    profiling.reset(rt)
    t0 = time.perf_counter()
    for _ in range(repeat):
        session.run(None, feeds)
    wall = (time.perf_counter() - t0) / repeat * 1e3
    launches = profiling.collect(rt)
    rows = profiling.summarize(launches, repeat)
    device = sum(r[2] for r in rows)
    idle = sum(item.idle_ms for item in launches) / repeat
    lines = [f"{name}: wall {wall:.1f} ms per run, device busy {device:.1f} ms, idle between launches "
             f"{idle:.1f} ms, {len(launches) // repeat} launches per run ({_load()})", "",
             "| launch | per run | device ms per run | share |", "|---|---|---|---|"]
    lines += [f"| {label} | {count} | {ms:.2f} | {100 * ms / device:.1f}% |" for label, count, ms in rows]
    return lines


DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
START, END = "<!-- bench_opencl:start -->", "<!-- bench_opencl:end -->"


def write_section(text: str) -> None:
    """Replace (or append) the OpenCL section of docs/benchmarks.md."""
    section = f"{START}\n{text.rstrip()}\n{END}\n"
    doc = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Benchmarks\n\n"
    if START in doc and END in doc:
        head, rest = doc.split(START, 1)
        doc = head + section + rest.split(END, 1)[1].lstrip("\n")
    else:
        doc = doc.rstrip() + "\n\n" + section
    DOC.write_text(doc, encoding="utf-8")


def main() -> None:
    """Run the selected benchmarks and print markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gemm", action="store_true", help="only the GEMM table")
    parser.add_argument("--models", nargs="*", default=None,
                        help="only these models (default: resnet18 mobilenetv2 transformer_encoder)")
    parser.add_argument("--sizes", nargs="*", type=int, default=[512, 1024])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--profile", nargs="*", default=None,
                        help="print device time per kernel for these models instead of benchmarking")
    parser.add_argument("--write", action="store_true", help="also write the tables into docs/benchmarks.md")
    args = parser.parse_args()
    if args.profile is not None:
        os.environ["ONNXPLUG_OPENCL_PROFILE"] = "1"
        for name in args.profile or ["resnet18"]:
            print("\n".join(profile_model(name, args.repeat)) + "\n")
        return
    only_gemm = args.gemm and args.models is None
    only_models = args.models is not None and not args.gemm
    lines = ["## OpenCL provider", "",
             f"`python benchmarks/bench_opencl.py` ({platform.machine()}, {os.cpu_count()} CPUs, "
             f"Python {platform.python_version()}, numpy {np.__version__}). The device is PoCL's CPU "
             "device on the same 2 cores as NumPy and onnxruntime.", "",
             "These numbers were taken on a machine shared with other jobs (see the load averages): "
             "medians move by 2x between runs, and the best run is closer to what an idle machine "
             "gives. GFLOP per CPU-second (process CPU time, all threads) is less sensitive to the "
             "load than wall time.", ""]
    if not only_models:
        lines += bench_gemm(args.sizes, args.repeat) + [""]
    if not only_gemm:
        names = args.models or ["resnet18", "mobilenetv2", "transformer_encoder"]
        lines += bench_models(names, args.repeat) + [""]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section(text)


if __name__ == "__main__":
    main()
