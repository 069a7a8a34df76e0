"""The numba provider against onnxruntime: latency on the model suite, compile cost, ResNet-18 FLOP/s.

    python benchmarks/bench_numba.py [--batch 1 8] [--models ...] [--skip-compile-cost] [--write]

``--write`` also replaces the numba section of docs/benchmarks.md with the results.

1. Latency: onnxruntime CPU vs providers=["numba"], interleaved blocks (harness.py); medians, ratio
   per model and batch, geomean and worst ratio.
2. Compile cost for ResNet-18, each in a fresh process: session creation and first run with empty
   numba and bytecode caches (cold), then with the caches the cold process left (warm).
3. ResNet-18's FLOP/s (2 x multiply-adds of its Conv and Gemm nodes / median latency) as a fraction
   of the machine's peak (cores x clock x FLOPs per cycle from the CPU's SIMD flags), for both.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import onnx

from pathlib import Path

from harness import geomean, interleaved, markdown_table, onnxplug_runner, onnxruntime_runner
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs

_COLD_WARM = textwrap.dedent("""
    import json, time, warnings
    warnings.simplefilter("ignore")
    import onnxplug as ort
    from onnxplug.testing.model_suite import build, sample_inputs
    model = build("resnet18").SerializeToString()
    feeds = sample_inputs("resnet18", 1)
    options = ort.SessionOptions(); options.intra_op_num_threads = 2
    t0 = time.perf_counter()
    session = ort.InferenceSession(model, options, providers=["numba"])
    t1 = time.perf_counter()
    session.run(None, feeds)
    t2 = time.perf_counter()
    session.run(None, feeds)
    t3 = time.perf_counter()
    print(json.dumps({"create_s": t1 - t0, "first_run_s": t2 - t1, "second_run_s": t3 - t2}))
""")


def compile_cost() -> dict[str, dict[str, float]]:
    """Cold then warm ResNet-18 session creation and first run, each in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="onnxplug-numba-bench-") as cache:
        env = {**os.environ, "ONNXPLUG_NUMBA_CACHE_DIR": cache, "NUMBA_CACHE_DIR": cache}
        # Python bytecode is cached too, as for any installed package (pip compiles it at install);
        # without it every fresh process recompiles each module's source. In a private folder, so
        # the cold process really starts without it.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(cache, "pycache")
        out = {}
        for label in ("cold", "warm"):
            done = subprocess.run([sys.executable, "-c", _COLD_WARM], env=env, capture_output=True, text=True,
                                  check=True)
            out[label] = json.loads(done.stdout.strip().splitlines()[-1])
        return out


def model_flops(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> float:
    """2 x the multiply-adds of the model's Conv, Gemm and MatMul nodes at the feeds' shapes."""
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    for vi in fixed.graph.input:
        if vi.name in feeds:
            for d, size in zip(vi.type.tensor_type.shape.dim, feeds[vi.name].shape):
                d.dim_value = size
    inferred = onnx.shape_inference.infer_shapes(fixed).graph
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in [*inferred.value_info, *inferred.input, *inferred.output]}
    shapes.update({t.name: list(t.dims) for t in inferred.initializer})
    total = 0.0
    for node in inferred.node:
        if node.op_type == "Conv":
            w, y = shapes[node.input[1]], shapes[node.output[0]]
            total += 2.0 * np.prod(y) * np.prod(w[1:])
        elif node.op_type in ("Gemm", "MatMul"):
            a, y = shapes[node.input[0]], shapes[node.output[0]]
            total += 2.0 * np.prod(y) * a[-1]
    return total


def machine_peak_flops() -> tuple[float, str]:
    """Theoretical float32 peak: cores x clock x FLOPs per cycle (two FMA units of the widest SIMD)."""
    flags, mhz = set(), 0.0
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
            elif line.startswith("cpu MHz") and not mhz:
                mhz = float(line.split(":", 1)[1])
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    per_cycle = lanes * (2 if "fma" in flags or "avx512f" in flags else 1) * 2
    cores = os.cpu_count() or 1
    peak = cores * mhz * 1e6 * per_cycle
    return peak, f"{cores} cores x {mhz / 1000:.2f} GHz x {per_cycle} float32 FLOPs/cycle"


DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
START, END = "<!-- bench_numba:start -->", "<!-- bench_numba:end -->"


def write_section(body: str) -> None:
    """Replace (or append) the numba section of docs/benchmarks.md."""
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    section = f"{START}\n## numba provider vs onnxruntime\n\n{body.strip()}\n{END}"
    if START in text and END in text:
        text = text[:text.index(START)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    DOC.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--models", nargs="+", default=list(MODEL_NAMES))
    parser.add_argument("--blocks", type=int, default=7)
    parser.add_argument("--block-runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-compile-cost", action="store_true")
    parser.add_argument("--write", action="store_true", help="update the numba section of docs/benchmarks.md")
    args = parser.parse_args(argv)
    report = io.StringIO()

    def emit(text: str = "") -> None:
        print(text)
        report.write(text + "\n")

    rows, ratios, resnet = [], [], {}
    load_start = os.getloadavg()[0]
    for name in args.models:
        model = build(name)
        for batch in args.batch:
            feeds = sample_inputs(name, batch=batch)
            engines = {"onnxruntime": onnxruntime_runner(model, args.threads),
                       "numba": onnxplug_runner(model, ["numba"], args.threads)}
            t = interleaved(engines, feeds, blocks=args.blocks, block_runs=args.block_runs)
            ratio = t["numba"].median_ms / t["onnxruntime"].median_ms
            ratios.append(ratio)
            rows.append([name, batch, f"{t['onnxruntime'].median_ms:.2f}", f"{t['numba'].median_ms:.2f}",
                         f"{ratio:.2f}"])
            if name == "resnet18":
                resnet[batch] = (model_flops(model, feeds), t)
            print(f"{name} batch {batch}: ratio {ratio:.2f}", file=sys.stderr, flush=True)
    emit("Single runs on this 2-core machine move by about 0.1-0.3 in geomean: compare several runs.")
    emit(f"taken {time.strftime('%Y-%m-%d %H:%M')}, load average {load_start:.1f} at the start and "
         f"{os.getloadavg()[0]:.1f} at the end on "
          f"{os.cpu_count()} cores; {platform.machine()}, numpy {np.__version__}, {args.threads} threads each, "
          f"interleaved blocks of {args.block_runs} runs x {args.blocks}\n")
    emit(markdown_table(["model", "batch", "onnxruntime ms (median)", "numba ms (median)", "ratio"], rows))
    emit(f"\ngeomean ratio numba / onnxruntime: {geomean(ratios):.2f}; worst {max(ratios):.2f}")
    if resnet:
        peak, how = machine_peak_flops()
        emit(f"\nResNet-18 FLOP/s against the machine's peak ({peak / 1e9:.0f} GFLOP/s: {how}; the clock is the "
             "nominal one /proc/cpuinfo reports, boost clocks raise the true peak, so both fractions are upper "
             "bounds):\n")
        peak_rows = []
        for batch, (flops, t) in sorted(resnet.items()):
            for engine in ("onnxruntime", "numba"):
                rate = flops / (t[engine].median_ms / 1e3)
                peak_rows.append([batch, engine, f"{flops / 1e9:.2f}", f"{rate / 1e9:.1f}", f"{100 * rate / peak:.1f}%"])
        emit(markdown_table(["batch", "engine", "GFLOP per run", "GFLOP/s", "of peak"], peak_rows))
    if not args.skip_compile_cost:
        cost = compile_cost()
        emit("\nResNet-18 compile cost (fresh process each; creation includes importing numba):\n")
        emit(markdown_table(["cache", "session creation s", "first run s", "second run s"],
                             [[k, f"{v['create_s']:.2f}", f"{v['first_run_s']:.2f}", f"{v['second_run_s']:.3f}"]
                              for k, v in cost.items()]))
    if args.write:
        write_section(f"`python benchmarks/bench_numba.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
                      f"\n\n{report.getvalue()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
