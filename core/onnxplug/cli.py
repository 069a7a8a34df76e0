"""The ``onnxplug`` command: list providers, run a model, run the conformance suite, optimize a model,
run a program with onnxplug standing in for onnxruntime (``onnxplug exec -- python app.py``)."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from typing import Sequence

import numpy as np

from onnxplug.cli_feeds import model_feeds
from onnxplug.errors import OnnxplugError


def _providers_command(args: argparse.Namespace) -> int:
    from onnxplug.plugins import get_catalog

    catalog = get_catalog()
    print(f"{'provider':<10} {'version':<9} {'available':<9} {'device / reason'}")
    for name in sorted(catalog.providers):
        cls = catalog.providers[name]
        plugin = next((p for p in catalog.plugins if p.name == catalog.owner[name]), None)
        version = cls.version or (plugin.version if plugin else "?")
        availability = cls.availability()
        devices = cls.devices() if availability else []
        detail = "; ".join(devices) if availability else availability.reason
        print(f"{name:<10} {version:<9} {'yes' if availability else 'no':<9} {detail}")
        for extra in devices[1:] if args.verbose else []:
            print(f"{'':<30} {extra}")
    for p in catalog.plugins:
        if p.error:
            print(f"plugin {p.name!r} ({p.distribution} {p.version}) failed to load: {p.error}")
    for r in catalog.rejected:
        print(f"provider {r.name!r} from plugin {r.plugin!r} refused: {r.reason}")
    return 0


def _run_command(args: argparse.Namespace) -> int:
    import onnxplug as ort

    options = ort.SessionOptions()
    if args.level is not None:
        options.graph_optimization_level = _LEVELS[args.level]
    t0 = time.perf_counter()
    sess = ort.InferenceSession(args.model, options, providers=args.provider or None)
    created = time.perf_counter() - t0
    engine = sess.engine
    feeds = model_feeds(engine, args.input, args.dim, args.seed)
    # a compiling provider (numba) may take tens of seconds here on a cold cache: say so up front
    print("onnxplug: first run (providers may compile kernels now; they are cached for later runs) ...",
          file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    outputs = sess.run(None, feeds)
    first = time.perf_counter() - t0
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    counts = Counter(a.provider for a in sess.get_node_assignments())
    print(f"model: {args.model}")
    print("assignment: " + ", ".join(f"{p}={n} node(s)" for p, n in counts.items()))
    if args.explain:
        from onnxplug.explain import explain_lines

        print("\n".join(explain_lines(engine)))
    if args.dump:
        from onnxplug.intermediates import dump

        print(f"intermediates: {dump(sess, feeds, args.dump)}")
    for arg, value in zip(sess.get_outputs(), outputs):
        shape = list(np.shape(value)) if isinstance(value, np.ndarray) else type(value).__name__
        dtype = value.dtype if isinstance(value, np.ndarray) else "-"
        print(f"output {arg.name}: shape {shape}, dtype {dtype}")
    median = f", median of {len(times)} runs {np.median(times) * 1e3:.2f} ms" if times else ""
    print(f"latency: session creation {created * 1e3:.1f} ms, first run {first * 1e3:.2f} ms{median}")
    if args.save_outputs:
        np.savez(args.save_outputs, **{a.name: v for a, v in zip(sess.get_outputs(), outputs)
                                       if isinstance(v, np.ndarray)})
    return 0


def _bench_command(args: argparse.Namespace) -> int:
    import json

    import onnxplug as ort
    from onnxplug.bench import benchmark, report_lines

    if args.runs < 1 or args.warmup < 0 or args.batch < 1:
        raise OnnxplugError("--runs and --batch must be at least 1, --warmup at least 0")
    sess = ort.InferenceSession(args.model, providers=args.provider or None)
    firsts = {str(vi.type.shape[0]) for vi in sess.engine.inputs
              if vi.type is not None and vi.type.shape and not isinstance(vi.type.shape[0], int)}
    dims = [f"{symbol}={args.batch}" for symbol in sorted(firsts)] + list(args.dim or [])
    feeds = model_feeds(sess.engine, args.input, dims, args.seed)
    label = f"onnxplug [{','.join(sess.get_providers())}]"
    runners = {label: lambda: sess.run(None, feeds)}
    if args.compare == "onnxruntime":
        import onnxruntime

        other = onnxruntime.InferenceSession(args.model, providers=["CPUExecutionProvider"])
        runners["onnxruntime [CPUExecutionProvider]"] = lambda: other.run(None, feeds)
    results = benchmark(runners, runs=args.runs, warmup=args.warmup, batch=args.batch)
    print(f"model: {args.model}")
    print("\n".join(report_lines(results, args.batch)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"model": str(args.model), "batch": args.batch, "warmup": args.warmup, "results": results},
                      f, indent=1)
    return 0


def _diff_command(args: argparse.Namespace) -> int:
    import onnxplug as ort
    from onnxplug.intermediates import describe, diff

    sides = tuple(p.strip() for p in args.providers.split(","))
    if len(sides) != 2 or sides.count("onnxruntime") > 1:
        raise OnnxplugError(f"--providers {args.providers!r}: expected two, e.g. numba,numpy or numba,onnxruntime")
    probe = ort.InferenceSession(args.model, providers=["numpy"])
    feeds = model_feeds(probe.engine, args.input, args.dim, args.seed)
    found, compared = diff(args.model, sides, feeds, rtol=args.rtol, atol=args.atol, level=_LEVELS[args.level])
    print(f"model: {args.model}")
    print(f"compared {compared} intermediate value(s) of {sides[0]} and {sides[1]} "
          f"(rtol {args.rtol:g}, atol {args.atol:g})")
    if found is None:
        print("no divergence")
        return 0
    print("\n".join(describe(found)))
    return 2


def _show_command(args: argparse.Namespace) -> int:
    import onnxplug as ort
    from onnxplug.show import node_times, page

    options = ort.SessionOptions()
    options.log_severity_level = 3  # the page shows the declines
    sess = ort.InferenceSession(args.model, options, providers=args.provider or None)
    times = None
    if args.profile:
        from onnxplug.profile_summary import load_trace

        times = node_times(load_trace(args.profile))
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(page(sess.engine, str(args.model), times))
    print(f"wrote {args.output}")
    return 0


_LEVELS = {"disabled": 0, "basic": 1, "extended": 2, "layout": 3, "all": 99}


def _conformance_command(args: argparse.Namespace, rest: Sequence[str]) -> int:
    try:
        from onnxplug_conformance.cli import main as conformance_main
    except ImportError:
        raise OnnxplugError("the conformance suite is not installed: pip install onnxplug-conformance "
                            "(conformance/ in the repository)") from None
    return conformance_main([args.provider, *rest])


def _optimize_command(args: argparse.Namespace) -> int:
    import onnx

    from onnxplug.engine import default_provider_computes
    from onnxplug.ir import load_model
    from onnxplug.optimizer import optimize_model
    from onnxplug.options import SessionOptions
    from onnxplug.provider_specs import create_providers

    model = load_model(args.model, computes=default_provider_computes)
    before = sum(1 for _ in model.graph.walk())
    providers = create_providers(args.provider or None, None, SessionOptions())
    reports = optimize_model(model, _LEVELS[args.level], providers)
    for r in reports:
        detail = ", ".join(f"{k}={v}" for k, v in sorted(r.counts.items())) or "no change"
        print(f"{r.name}: {detail}")
    onnx.save_model(model.to_proto(), args.output)
    after = sum(1 for _ in model.graph.walk())
    print(f"nodes: {before} -> {after}; saved {args.output}")
    return 0


def _models_command(args: argparse.Namespace) -> int:
    import onnx

    from onnxplug.testing.model_suite import MODEL_NAMES, build

    if args.name not in MODEL_NAMES:
        raise OnnxplugError(f"unknown model {args.name!r}; choose one of {', '.join(MODEL_NAMES)}")
    onnx.save_model(build(args.name, seed=args.seed), args.output)
    print(f"built {args.name} -> {args.output}")
    return 0


def _exec_command(args: argparse.Namespace) -> int:
    import os
    import subprocess

    from onnxplug.as_onnxruntime import environment

    command = list(args.program)
    while command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise OnnxplugError("onnxplug exec: name a command to run, e.g. onnxplug exec -- python app.py")
    env = environment()
    if os.name == "posix":
        sys.stdout.flush()
        os.execvpe(command[0], command, env)  # the command takes this process over (signals, exit code)
    return subprocess.call(command, env=env)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``onnxplug`` command."""
    parser = argparse.ArgumentParser(prog="onnxplug", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("providers", help="list installed providers with availability and devices")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per device")

    p = sub.add_parser("run", help="run a model on random or given inputs")
    p.add_argument("model")
    p.add_argument("--provider", action="append", help="provider to use, in priority order (repeatable)")
    p.add_argument("--input", action="append", metavar="NAME=FILE.npy", help="feed an input from a .npy file")
    p.add_argument("--dim", action="append", metavar="SYMBOL=SIZE", help="size of a symbolic dim (default 1)")
    p.add_argument("--repeat", type=int, default=10, help="timed runs after the first (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--level", choices=sorted(_LEVELS), help="graph optimization level (default all)")
    p.add_argument("--save-outputs", metavar="FILE.npz")
    p.add_argument("--dump", metavar="DIR", help="write every intermediate value as .npy with a manifest.json")
    p.add_argument("--explain", action="store_true", help="say why providers declined the nodes they left")

    p = sub.add_parser("conformance", help="run the conformance suite on a provider (onnxplug-conformance)")
    p.add_argument("provider")

    p = sub.add_parser("optimize", help="optimize a model and save it")
    p.add_argument("model")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--level", choices=sorted(_LEVELS), default="all")
    p.add_argument("--provider", action="append")

    p = sub.add_parser("exec", help="run a command whose Python processes get onnxplug for import onnxruntime")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]")

    p = sub.add_parser("bench", help="time a model: warm-up, counted runs, median/p90/min and throughput")
    p.add_argument("model")
    p.add_argument("--provider", action="append", help="provider in priority order (repeatable)")
    p.add_argument("--batch", type=int, default=1, help="size of the inputs' symbolic first dimension (default 1)")
    p.add_argument("--runs", type=int, default=50, help="counted runs (default 50)")
    p.add_argument("--warmup", type=int, default=5, help="uncounted runs first (default 5)")
    p.add_argument("--compare", choices=["onnxruntime"], help="also time onnxruntime, in alternating blocks")
    p.add_argument("--input", action="append", metavar="NAME=FILE.npy", help="feed an input from a .npy file")
    p.add_argument("--dim", action="append", metavar="SYMBOL=SIZE", help="size of a symbolic dim (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="OUT.json", help="write the results as JSON")

    p = sub.add_parser("diff", help="run a model on two providers (or onnxruntime) and find where they part")
    p.add_argument("model")
    p.add_argument("--providers", required=True, metavar="A,B", help="two providers, or one and onnxruntime")
    p.add_argument("--input", action="append", metavar="NAME=FILE.npy", help="feed an input from a .npy file")
    p.add_argument("--dim", action="append", metavar="SYMBOL=SIZE", help="size of a symbolic dim (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--level", choices=sorted(_LEVELS), default="disabled",
                   help="graph optimization level of the onnxplug sides (default disabled: the model's values)")

    p = sub.add_parser("show", help="write a standalone HTML page of the partitioned graph (needs Graphviz dot)")
    p.add_argument("model")
    p.add_argument("--provider", action="append", help="provider in priority order (repeatable)")
    p.add_argument("-o", "--output", required=True, metavar="graph.html")
    p.add_argument("--profile", metavar="TRACE.json", help="show node times from a profile")

    p = sub.add_parser("profile", help="summarise a profile written by enable_profiling (Chrome trace JSON)")
    p.add_argument("trace")
    p.add_argument("--top", type=int, default=10, help="how many of the slowest nodes to list (default 10)")

    p = sub.add_parser("models", help="build a model of the project's suite (no download)")
    p.add_argument("name")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``onnxplug`` command."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["exec"] or argv[:2] == ["--debug", "exec"]:  # the rest is the command's, flags included
        at = argv.index("exec")
        args, rest = parser.parse_args([*argv[:at + 1], "--", *argv[at + 1:]]), []
    else:
        args, rest = parser.parse_known_args(argv)
    if rest and args.command != "conformance":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        if args.command == "providers":
            return _providers_command(args)
        if args.command == "run":
            return _run_command(args)
        if args.command == "conformance":
            return _conformance_command(args, rest)
        if args.command == "optimize":
            return _optimize_command(args)
        if args.command == "exec":
            return _exec_command(args)
        if args.command == "bench":
            return _bench_command(args)
        if args.command == "diff":
            return _diff_command(args)
        if args.command == "show":
            return _show_command(args)
        if args.command == "profile":
            from onnxplug.profile_summary import load_trace, summarise

            print("\n".join(summarise(load_trace(args.trace), args.top)))
            return 0
        return _models_command(args)
    except (OnnxplugError, OSError) as e:
        if args.debug:
            raise
        print(f"onnxplug: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
