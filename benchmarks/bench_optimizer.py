"""Benchmark of the graph optimizer: what each level removes and how fast the suite runs.

For each model of the suite: node counts before optimization and after each level, onnxruntime's
own ORT_ENABLE_ALL node count (from the model it saves with ``optimized_model_filepath``), and the
median latency of onnxplug at each level next to onnxruntime (2 threads), in interleaved blocks.

    python benchmarks/bench_optimizer.py [--models resnet18 ...] [--rounds 5] [--runs 3] [--write]

``--write`` replaces the optimizer section of docs/benchmarks.md (between its markers). onnxplug
runs with ``intra_op_num_threads=1`` (its numpy BLAS single-threaded): on a busy 2-core machine, 2
BLAS threads make identical graphs' times vary at random.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy loads its BLAS

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402

import onnxplug as ort  # noqa: E402
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs  # noqa: E402

LEVELS = {"disabled": 0, "basic": 1, "extended": 2, "all": 99}
#: onnxplug's numpy provider sizes the (process-wide) BLAS pool from this; with 2 threads on the
#: shared 2-core machine, even tiny models stall at random, hiding what the levels change.
ONNXPLUG_THREADS = 1
START, END = "<!-- bench_optimizer:start -->", "<!-- bench_optimizer:end -->"
DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def _ours(proto: onnx.ModelProto, level: int) -> tuple[ort.InferenceSession, int, float]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel(level)
    so.intra_op_num_threads = ONNXPLUG_THREADS
    t0 = time.perf_counter()
    sess = ort.InferenceSession(proto, so)
    return sess, len(sess.engine.model.graph.nodes), time.perf_counter() - t0


def _onnxruntime(proto: onnx.ModelProto, level: onnxruntime.GraphOptimizationLevel,
                 save: bool = False) -> tuple[onnxruntime.InferenceSession, int | None]:
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 2
    so.graph_optimization_level = level
    so.log_severity_level = 3
    path = None
    if save:
        path = os.path.join(tempfile.mkdtemp(), "ort_optimized.onnx")
        so.optimized_model_filepath = path
    sess = onnxruntime.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
    count = len(onnx.load(path).graph.node) if path else None
    return sess, count


def _interleaved(runners: dict[str, Callable[[], Any]], rounds: int,
                 runs: int) -> dict[str, tuple[float, float]]:
    """(median, fastest) seconds per run of each runner, measured in interleaved blocks."""
    samples: dict[str, list[float]] = {k: [] for k in runners}
    for fn in runners.values():
        fn()  # warm-up (first-run allocations, lazy kernel setup)
    for _ in range(rounds):
        for key, fn in runners.items():
            for _ in range(runs):
                t0 = time.perf_counter()
                fn()
                samples[key].append(time.perf_counter() - t0)
            time.sleep(0.3)
    return {k: (statistics.median(v), min(v)) for k, v in samples.items()}


def bench_model(name: str, rounds: int, runs: int) -> dict[str, Any]:
    """Node counts and latencies of one model."""
    proto, feeds = build(name), sample_inputs(name, batch=1)
    row: dict[str, Any] = {"model": name}
    runners: dict[str, Callable[[], Any]] = {}
    for label, level in LEVELS.items():
        sess, nodes, created = _ours(proto, level)
        row[f"nodes_{label}"], row[f"create_{label}"] = nodes, created
        runners[label] = lambda s=sess: s.run(None, feeds)
    levels = onnxruntime.GraphOptimizationLevel
    sess_all, row["nodes_ort_all"] = _onnxruntime(proto, levels.ORT_ENABLE_ALL, save=True)
    _, row["nodes_ort_extended"] = _onnxruntime(proto, levels.ORT_ENABLE_EXTENDED, save=True)
    runners["onnxruntime"] = lambda: sess_all.run(None, feeds)
    medians = _interleaved(runners, rounds, runs)
    row.update({f"ms_{k}": v[0] * 1e3 for k, v in medians.items()})
    row.update({f"best_{k}": v[1] * 1e3 for k, v in medians.items()})
    return row


def render(rows: list[dict[str, Any]], rounds: int, runs: int, loads: tuple[float, float]) -> str:
    """The markdown section for docs/benchmarks.md."""
    lines = [
        START,
        "## Graph optimizer",
        "",
        "`python benchmarks/bench_optimizer.py --write` "
        f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}, onnxruntime {onnxruntime.__version__}; batch 1; medians of "
        f"{rounds} interleaved rounds x {runs} runs, 0.3 s pauses between blocks; onnxruntime with "
        f"2 intra-op threads, onnxplug with {ONNXPLUG_THREADS} (its numpy BLAS pool)).",
        "",
        "Node counts are top-level graph nodes (subgraph bodies not counted, as onnxruntime's saved "
        "model lists them). onnxruntime's counts come from the model it saves with "
        "`optimized_model_filepath`; at ALL its CPU provider also converts convolutions to its NCHWc "
        "layout (`com.microsoft.nchwc` ops, plus reorder nodes).",
        "",
        "| model | nodes | basic | extended | all | onnxruntime EXTENDED | onnxruntime ALL |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['model']} | {r['nodes_disabled']} | {r['nodes_basic']} | {r['nodes_extended']} | "
                     f"{r['nodes_all']} | {r['nodes_ort_extended']} | {r['nodes_ort_all']} |")
    lines += [
        "",
        "Latency (ms, median) of onnxplug (numpy provider) per level, with onnxruntime ALL for scale. "
        f"The machine was shared (1-minute load average {loads[0]:.1f} at the start, {loads[1]:.1f} at "
        "the end): where `extended` and `all` run the same graph (every model here, since no provider "
        "asks for a layout), their difference shows the run-to-run noise.",
        "",
        "| model | disabled | basic | extended | all | all vs disabled | onnxruntime ALL | onnxplug all / onnxruntime |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['ms_disabled']:.2f} | {r['ms_basic']:.2f} | {r['ms_extended']:.2f} | "
            f"{r['ms_all']:.2f} | {r['ms_disabled'] / r['ms_all']:.2f}x faster | {r['ms_onnxruntime']:.2f} | "
            f"{r['ms_all'] / r['ms_onnxruntime']:.1f}x |")
    lines += [
        "",
        "Fastest run (ms) per level, less sensitive to other jobs on the machine than the median:",
        "",
        "| model | disabled | basic | extended | all | all vs disabled | onnxruntime ALL |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['best_disabled']:.2f} | {r['best_basic']:.2f} | {r['best_extended']:.2f} | "
            f"{r['best_all']:.2f} | {r['best_disabled'] / r['best_all']:.2f}x faster | "
            f"{r['best_onnxruntime']:.2f} |")
    lines += [
        "",
        "Session creation (s) per level, which includes loading, optimizing and planning:",
        "",
        "| model | disabled | basic | extended | all |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['model']} | {r['create_disabled']:.2f} | {r['create_basic']:.2f} | "
                     f"{r['create_extended']:.2f} | {r['create_all']:.2f} |")
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_doc(section: str) -> None:
    """Replace (or append) the optimizer section of docs/benchmarks.md, keeping everything else."""
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n\n"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section.rstrip("\n") + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print (or write) the markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(MODEL_NAMES))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    rows = []
    start_load = os.getloadavg()[0]
    for name in args.models:
        rows.append(bench_model(name, args.rounds, args.runs))
        print(f"done {name}", file=sys.stderr, flush=True)
    section = render(rows, args.rounds, args.runs, (start_load, os.getloadavg()[0]))
    print(section)
    if args.write:
        write_doc(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
