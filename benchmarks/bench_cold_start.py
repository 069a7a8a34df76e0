"""Cold and warm start of a model on a provider: session creation and first runs in fresh processes.

    onnxplug models resnet18 -o /tmp/r18.onnx
    python benchmarks/bench_cold_start.py /tmp/r18.onnx --provider numba [--repeat 2]

Each measurement is a new Python process: the cold one with empty numba and generated-kernel cache
folders (``NUMBA_CACHE_DIR``, ``ONNXPLUG_NUMBA_CACHE_DIR``), the warm ones reusing what it left.
Printed per process: import, session creation, first and second run (wall seconds), CPU seconds of
the process up to there (all threads), and onnxruntime's session creation and first run for scale.
``--compiles`` lists the cold process's numba compilations (CPU s per function, nested ones apart);
on numba the compile helper's CPU time is a column of its own, and ``--no-helper`` adds a cold
process with the helper off.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
c0 = time.process_time()
t0 = time.perf_counter()
import numpy as np
compiles, stack = {}, []
if sys.argv[3] == "1":
    from numba.core import event

    class Compiles(event.Listener):
        def on_start(self, ev):
            stack.append([time.process_time(), 0.0])

        def on_end(self, ev):
            start, nested = stack.pop()
            spent = time.process_time() - start
            if stack:
                stack[-1][1] += spent
            f = ev.data["dispatcher"].py_func
            name = f"{f.__module__}.{f.__qualname__}".split(".<locals>")[0]
            compiles[name] = compiles.get(name, 0.0) + spent - nested

    event.register("numba:compile", Compiles())
import onnxplug
t1 = time.perf_counter()
c1 = time.process_time()
so = onnxplug.SessionOptions(); so.intra_op_num_threads = 2
provider = (sys.argv[2], {"compile_helper": sys.argv[4]}) if sys.argv[2] == "numba" else sys.argv[2]
sess = onnxplug.InferenceSession(sys.argv[1], so, providers=[provider])
t2 = time.perf_counter()
c2 = time.process_time()
inp = sess.get_inputs()[0]
shape = [d if isinstance(d, int) else 1 for d in inp.shape]
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
sess.run(None, {inp.name: x})
t3 = time.perf_counter()
c3 = time.process_time()
sess.run(None, {inp.name: x})
t4 = time.perf_counter()
c4 = time.process_time()
helper_cpu = 0.0
helper_state = {}
if sys.argv[2] == "numba":
    import resource
    from onnxplug_numba import compile_helper
    h = compile_helper._helper
    if h is not None:  # let it finish what it compiles, then count its CPU time
        helper_state = dict(h.state)
        h.process.stdin.close()
        h.process.wait()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        helper_cpu = usage.ru_utime + usage.ru_stime
import onnxruntime
o = onnxruntime.SessionOptions(); o.intra_op_num_threads = 2
t5 = time.perf_counter()
ref = onnxruntime.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
t6 = time.perf_counter()
ref.run(None, {inp.name: x})
t7 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "session_s": t2 - t1, "first_run_s": t3 - t2, "second_run_s": t4 - t3,
                  "cpu_s": c4 - c0, "cpu_session_s": c2 - c1, "cpu_first_run_s": c3 - c2,
                  "ort_session_s": t6 - t5, "ort_first_run_s": t7 - t6, "compiles": compiles,
                  "helper_cpu_s": helper_cpu, "helper": helper_state}))
"""


def run_child(model: str, provider: str, env: dict[str, str], compiles: bool = False, helper: bool = True) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, model, provider, "1" if compiles else "0", "1" if helper else "0"],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--provider", default="numba")
    parser.add_argument("--repeat", type=int, default=2, help="warm processes after the cold one")
    parser.add_argument("--compiles", action="store_true", help="list the cold process's numba compilations")
    parser.add_argument("--no-helper", action="store_true",
                        help="numba: a cold process without the compile helper as well")
    args = parser.parse_args(argv)
    rows = []
    for helper in ([True, False] if args.no_helper else [True]):
        with tempfile.TemporaryDirectory() as numba_cache, tempfile.TemporaryDirectory() as plug_cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=numba_cache, ONNXPLUG_NUMBA_CACHE_DIR=plug_cache)
            rows.append(("cold" if helper else "cold, no compile helper",
                         run_child(args.model, args.provider, env, args.compiles and helper, helper)))
            if helper:
                rows += [(f"warm {k + 1}", run_child(args.model, args.provider, env)) for k in range(args.repeat)]
    print("| process | import s | session s | first run s | session + first run s | second run s "
          "| CPU s: session | CPU s: first run | CPU s: whole process to there | CPU s: compile helper "
          "| onnxruntime session + first run s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label, r in rows:
        print(f"| {label} | {r['import_s']:.2f} | {r['session_s']:.2f} | {r['first_run_s']:.2f} "
              f"| {r['session_s'] + r['first_run_s']:.2f} | {r['second_run_s']:.3f} "
              f"| {r['cpu_session_s']:.2f} | {r['cpu_first_run_s']:.2f} | {r['cpu_s']:.1f} | {r['helper_cpu_s']:.1f} "
              f"| {r['ort_session_s'] + r['ort_first_run_s']:.2f} |")
    for label, r in rows:
        if r["helper"]:
            print(f"\n{label}: compile helper's kernels: "
                  + ", ".join(f"{name} {word}" for name, word in r["helper"].items()))
    if args.compiles:
        spent = rows[0][1]["compiles"]
        print(f"\ncold process: numba compilations, {sum(spent.values()):.1f} CPU s in all\n")
        print("| function | CPU s |")
        print("|---|---|")
        for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[:15]:
            print(f"| {name} | {seconds:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
