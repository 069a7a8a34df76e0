"""Latency of onnxplug providers against onnxruntime (CPU, 2 threads) on the model suite.

    python benchmarks/bench_models.py --provider numpy [--batch 1 8] [--models resnet18 ...] [--repeat 3]

Prints a Markdown table of medians and ratios (ours / onnxruntime) and the geomean ratio. With
``--repeat N`` the whole suite is measured N times over (the same sessions), and the table gives
each row's median ratio over the passes with its range, then every pass's geomean, since on a
shared machine single rows move a lot from one pass to the next.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from harness import geomean, interleaved, machine_description, markdown_table, onnxplug_runner, onnxruntime_runner
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", action="append", help="onnxplug provider(s), in priority order")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--models", nargs="+", default=list(MODEL_NAMES))
    parser.add_argument("--blocks", type=int, default=7)
    parser.add_argument("--block-runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="measure the whole suite this many times")
    args = parser.parse_args(argv)
    if args.repeat > 1:
        return _repeated(args)
    providers = args.provider or ["numpy"]
    label = "+".join(providers)
    rows, ratios = [], []
    for name in args.models:
        model = build(name)
        for batch in args.batch:
            feeds = sample_inputs(name, batch=batch)
            engines = {"onnxruntime": onnxruntime_runner(model, args.threads),
                       label: onnxplug_runner(model, providers, args.threads)}
            # Heavier models get fewer runs per block so the whole benchmark stays a few minutes.
            t = interleaved(engines, feeds, blocks=args.blocks, block_runs=args.block_runs)
            ratio = t[label].median_ms / t["onnxruntime"].median_ms
            ratios.append(ratio)
            rows.append([name, batch, f"{t['onnxruntime'].median_ms:.2f}", f"{t[label].median_ms:.2f}",
                         f"{ratio:.2f}"])
            print(f"{name} batch {batch}: ratio {ratio:.2f}", file=sys.stderr, flush=True)
    print(f"machine: {machine_description()}; {args.threads} threads each, interleaved blocks of "
          f"{args.block_runs} runs x {args.blocks}")
    print(markdown_table(["model", "batch", "onnxruntime ms (median)", f"{label} ms (median)", "ratio"], rows))
    print(f"\ngeomean ratio {label} / onnxruntime: {geomean(ratios):.2f}; worst {max(ratios):.2f}")
    return 0


def _repeated(args: argparse.Namespace) -> int:
    """The suite measured ``args.repeat`` times; per row the median ratio over the passes."""
    providers = args.provider or ["numpy"]
    label = "+".join(providers)
    cases = []
    for name in args.models:
        model = build(name)
        for batch in args.batch:
            engines = {"onnxruntime": onnxruntime_runner(model, args.threads),
                       label: onnxplug_runner(model, providers, args.threads)}
            cases.append((name, batch, sample_inputs(name, batch=batch), engines))
    ratios: list[list[float]] = [[] for _ in cases]
    for r in range(args.repeat):
        for k, (name, batch, feeds, engines) in enumerate(cases):
            t = interleaved(engines, feeds, blocks=args.blocks, block_runs=args.block_runs)
            ratios[k].append(t[label].median_ms / t["onnxruntime"].median_ms)
        print(f"pass {r + 1}: geomean {geomean([x[-1] for x in ratios]):.2f}", file=sys.stderr, flush=True)
    rows = [[name, batch, f"{statistics.median(rs):.2f}", f"{min(rs):.2f}-{max(rs):.2f}"]
            for (name, batch, _, _), rs in zip(cases, ratios)]
    print(f"machine: {machine_description()}; {args.threads} threads each, {args.repeat} passes of interleaved blocks of "
          f"{args.block_runs} runs x {args.blocks}")
    print(markdown_table(["model", "batch", f"{label} / onnxruntime (median of passes)", "range"], rows))
    passes = [geomean([rs[r] for rs in ratios]) for r in range(args.repeat)]
    print(f"\ngeomean ratio {label} / onnxruntime per pass: {', '.join(f'{g:.2f}' for g in passes)}; "
          f"of the row medians: {geomean([statistics.median(rs) for rs in ratios]):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
