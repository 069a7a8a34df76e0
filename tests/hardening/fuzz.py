"""Fuzz harness: hostile models through load, check, optimise and ``run``.

Each case is bytes of an ONNX model: either a small valid seed model with its bytes mutated, or a
random small graph built from hostile but well-formed pieces (odd names, wrong attribute kinds,
dangling or repeated values, extreme shapes). The promise checked: a case runs, or raises a
subclass of ``onnxplug.errors.OnnxplugError``; anything else is an escape, and a case past its time
limit is a hang. Cases are a pure function of (seed, index), so every finding replays.

``python -m tests.hardening.fuzz --cases N --seed S`` runs N cases and prints a summary.
"""

from __future__ import annotations

import argparse
import collections
import random
import signal
import sys
import threading
import time
import traceback
import warnings

import numpy as np
import onnx
import onnxplug as ort
from onnx import TensorProto, helper
from onnxplug.errors import OnnxplugError, RunTerminatedError

OPSET = 17


class CaseTimeout(BaseException):
    """Raised in the case's thread when it runs past its limit (a BaseException so no handler eats it)."""


def _model(nodes, inputs, outputs, inits=(), opset=OPSET) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*o) for o in outputs], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def add_one_loop_body() -> onnx.GraphProto:
    """A Loop body adding one to a float[4] carried value per iteration (condition passed through)."""
    f = TensorProto.FLOAT
    return helper.make_graph(
        [helper.make_node("Add", ["acc", "one"], ["acc_out"]), helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("acc", f, [4])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", f, [4])],
        initializer=[onnx.numpy_helper.from_array(np.ones(4, np.float32), "one")])


def seed_models() -> list[bytes]:
    """Small valid models whose bytes the mutator starts from."""
    f = TensorProto.FLOAT
    b = onnx.numpy_helper.from_array(np.array([1, -1, 2, -2], np.float32), "b")
    w = onnx.numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
    shape = onnx.numpy_helper.from_array(np.array([2, -1], np.int64), "shape")
    idx = onnx.numpy_helper.from_array(np.array([0, 2], np.int64), "idx")
    body = add_one_loop_body()
    trip = onnx.numpy_helper.from_array(np.array(3, np.int64), "trip")
    cond = onnx.numpy_helper.from_array(np.array(True), "cond")
    models = [
        _model([helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
               [("x", f, ["N", 4])], [("y", f, ["N", 4])], [b]),
        _model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                helper.make_node("Relu", ["c"], ["y"])],
               [("x", f, [1, 1, 4, 4])], [("y", f, [1, 2, 4, 4])], [w]),
        _model([helper.make_node("Reshape", ["x", "shape"], ["r"]),
                helper.make_node("Gather", ["r", "idx"], ["y"], axis=1)],
               [("x", f, [2, 3])], [("y", f, [2, 2])], [shape, idx]),
        _model([helper.make_node("Loop", ["trip", "cond", "x"], ["y"], body=body)],
               [("x", f, [4])], [("y", f, [4])], [trip, cond]),
        _model([helper.make_node("MatMul", ["x", "x"], ["m"]), helper.make_node("Softmax", ["m"], ["y"], axis=-1)],
               [("x", f, [3, 3])], [("y", f, [3, 3])]),
    ]
    return [m.SerializeToString() for m in models]


_INTERESTING = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
                b"\xc3\x28", b"\xfe", b"\x01"]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """A few byte-level edits: flips, overwrites with varint-edge values, inserts, deletes, splices."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not buf:
            break
        pos = rng.randrange(len(buf))
        kind = rng.randrange(6)
        if kind == 0:
            buf[pos] ^= 1 << rng.randrange(8)
        elif kind == 1:
            buf[pos] = rng.randrange(256)
        elif kind == 2:
            piece = rng.choice(_INTERESTING)
            buf[pos:pos + len(piece)] = piece
        elif kind == 3:
            buf[pos:pos] = rng.choice(_INTERESTING)
        elif kind == 4:
            del buf[pos:pos + rng.randint(1, 8)]
        else:
            start = rng.randrange(len(buf))
            buf[pos:pos] = buf[start:start + rng.randint(1, 16)]
    return bytes(buf)


#: op -> (inputs, attributes worth setting); inputs are drawn from the values defined so far
_OPS = {
    "Add": (2, []), "Mul": (2, []), "Relu": (1, []), "MatMul": (2, []), "Reshape": (2, ["allowzero"]),
    "Expand": (2, []), "ConstantOfShape": (1, ["value"]), "Gather": (2, ["axis"]), "Concat": (2, ["axis"]),
    "Transpose": (1, ["perm"]), "Softmax": (1, ["axis"]), "Cast": (1, ["to"]), "Identity": (1, []),
    "Slice": (3, []), "Resize": (3, ["mode"]), "Tile": (2, []), "Range": (3, []), "Where": (3, []),
    "ReduceSum": (2, ["keepdims"]), "Conv": (2, ["pads", "strides", "group"]), "Split": (1, ["axis"]),
    "Squeeze": (2, []), "Unsqueeze": (2, []), "Pad": (2, ["mode"]), "TopK": (2, ["axis"]),
    "NonZero": (1, []), "Shape": (1, ["start", "end"]), "Size": (1, []), "OneHot": (3, ["axis"]),
    "Flatten": (1, ["axis"]), "CumSum": (2, []), "ArgMax": (1, ["axis"]), "Einsum": (2, ["equation"]),
    "Trilu": (1, ["upper"]), "ScatterND": (3, []), "GatherND": (2, ["batch_dims"]), "Mod": (2, ["fmod"]),
    "Div": (2, []), "Pow": (2, []), "Sqrt": (1, []), "MaxPool": (1, ["kernel_shape", "pads"]),
    "DepthToSpace": (1, ["blocksize"]), "If": (1, ["then_branch"]), "Loop": (3, ["body"]),
}
_HOSTILE_NAMES = ["", "\u00e9\u4e2d", "a" * 300, " ", "\x00", "x", "v0"]
_TYPES = [TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL, TensorProto.DOUBLE,
          TensorProto.FLOAT16, TensorProto.UINT8, TensorProto.STRING, TensorProto.UNDEFINED, 999]


def _pick(rng: random.Random, usual, hostile, p: float = 0.1):
    """``usual`` most of the time, one of ``hostile`` with probability ``p``: deep cases need mostly-valid parts."""
    return rng.choice(hostile) if rng.random() < p else usual


def _attr(rng: random.Random, name: str):
    kind = rng.randrange(8)
    if name == "equation":
        return helper.make_attribute(name, rng.choice(["ij,jk->ik", "ii->i", "...,...", "ab", "->", "i,i"]))
    if name in ("then_branch", "body"):
        return helper.make_attribute(name, helper.make_graph([], "sub", [], []))
    if kind == 0:
        return helper.make_attribute(name, rng.choice([0, -1, 1, 2, 2**62, -(2**63), 10**6]))
    if kind == 1:
        return helper.make_attribute(name, rng.choice([0.0, float("nan"), float("inf"), -1e300]))
    if kind == 2:
        return helper.make_attribute(name, rng.choice(["", "nearest", "constant", "reflect", "\u00ff"]))
    if kind == 3:
        return helper.make_attribute(name, [rng.choice([0, -1, 1, 3, 2**40]) for _ in range(rng.randint(1, 5))])
    if kind == 4:
        dims = [rng.choice([0, 1, 2, 3]) for _ in range(rng.randint(0, 3))]
        return helper.make_attribute(name, helper.make_tensor("v", rng.choice(_TYPES[:7]), dims,
                                                              [1] * int(np.prod(dims, dtype=np.int64))))
    if kind == 5:
        return helper.make_attribute(name, helper.make_graph([], "sub", [], []))
    if kind == 6:
        return helper.make_attribute(name, rng.choice([1, 2, 3]))
    a = helper.make_attribute(name, 1)
    a.type = rng.randrange(0, 15)  # a declared kind that may not match the field set
    return a


def _initializer(rng: random.Random, name: str) -> onnx.TensorProto:
    dims = [rng.choice([1, 1, 2, 3, 4, 0]) for _ in range(rng.randint(0, 3))]
    dt = rng.choice([np.float32, np.int64, np.int64, np.int32, np.bool_])
    arr = (np.arange(int(np.prod(dims, dtype=np.int64))) % 4 - rng.choice([0, 0, 1])).astype(dt).reshape(dims)
    if rng.random() < 0.15 and arr.size and dt is np.int64:
        arr = np.full(arr.shape, rng.choice([-1, 0, 2**31, 10**6, 2**62, -(2**63)]), np.int64)
    t = onnx.numpy_helper.from_array(arr, name)
    if rng.random() < 0.03:
        t.dims.append(rng.choice([2**40, 2**60, -1]))  # header claims more (or less) than the data holds
    return t


def hostile_graph(rng: random.Random) -> bytes:
    """A random small graph of well-formed protobuf, mostly valid, with hostile parts here and there."""
    values = ["x"]
    inits = []
    for k in range(rng.randint(0, 4)):
        inits.append(_initializer(rng, f"c{k}"))
        values.append(f"c{k}")
    nodes = []
    for i in range(rng.randint(1, 5)):
        op = rng.choice(list(_OPS))
        arity, attr_names = _OPS[op]
        ins = [_pick(rng, rng.choice(values), ["missing", ""], 0.05) for _ in range(_pick(rng, arity, [0, 1, 4]))]
        outs = [_pick(rng, f"v{i}", ["x", "v0", "c0", ""], 0.05)]
        if op in ("TopK", "Split"):
            outs.append(f"v{i}b")
        n = helper.make_node(op, ins, outs, name=_pick(rng, f"n{i}", _HOSTILE_NAMES))
        if attr_names and rng.random() < 0.5:
            n.attribute.append(_attr(rng, rng.choice(attr_names)))
        if rng.random() < 0.05:
            n.attribute.append(_attr(rng, rng.choice(["axis", "bogus", "to"])))
        if rng.random() < 0.03:
            n.domain = rng.choice(["ai.onnx.ml", "com.microsoft", "bogus", "ai.onnx"])
        nodes.append(n)
        values.extend(outs)
    out_name = _pick(rng, nodes[-1].output[0], _HOSTILE_NAMES + ["x", "c0"], 0.05)
    in_dims = [_pick(rng, rng.choice([1, 2, 3, "N"]), [0, -1, 2**40]) for _ in range(rng.randint(0, 3))]
    in_type = _pick(rng, rng.choice([TensorProto.FLOAT, TensorProto.INT64]), _TYPES[2:])
    g = helper.make_graph(nodes, _pick(rng, "g", _HOSTILE_NAMES, 0.05),
                          [helper.make_tensor_value_info("x", in_type, in_dims)],
                          [helper.make_tensor_value_info(out_name, _pick(rng, 0, _TYPES, 0.2), None)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", _pick(rng, OPSET, [1, 7, 13, 21, 99]))])
    m.ir_version = _pick(rng, 8, [3, 0, 99, 14], 0.05)
    data = m.SerializeToString()
    return mutate(data, rng) if rng.random() < 0.1 else data


def make_case(seed: int, index: int) -> bytes:
    rng = random.Random(seed * 1_000_003 + index)
    if rng.random() < 0.5:
        return mutate(rng.choice(_SEEDS), rng)
    return hostile_graph(rng)


_NP = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.INT64: np.int64,
       TensorProto.INT32: np.int32, TensorProto.BOOL: np.bool_, TensorProto.FLOAT16: np.float16,
       TensorProto.UINT8: np.uint8}


def _feeds(sess) -> dict | None:
    feeds = {}
    for i in sess.get_inputs():
        proto_type = {v: k for k, v in {TensorProto.FLOAT: "tensor(float)", TensorProto.DOUBLE: "tensor(double)",
                                        TensorProto.INT64: "tensor(int64)", TensorProto.INT32: "tensor(int32)",
                                        TensorProto.BOOL: "tensor(bool)", TensorProto.FLOAT16: "tensor(float16)",
                                        TensorProto.UINT8: "tensor(uint8)"}.items()}.get(i.type)
        if proto_type is None:
            return None
        shape = [d if isinstance(d, int) and 0 <= d <= 8 else 2 for d in (i.shape or [])]
        feeds[i.name] = (np.arange(int(np.prod(shape, dtype=np.int64))) % 3).astype(_NP[proto_type]).reshape(shape)
    return feeds


def run_case(data: bytes, cancel_after_s: float | None = None) -> None:
    """Load, check, optimise and run one model (bytes), with inputs from its declared shapes; the
    run is cancelled (``RunOptions.terminate``) from another thread after ``cancel_after_s``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sess = ort.InferenceSession(data, providers=["numpy"])
        feeds = _feeds(sess)
        if feeds is None:
            return
        options = ort.RunOptions()
        timer = threading.Timer(cancel_after_s, setattr, (options, "terminate", True)) if cancel_after_s else None
        if timer:
            timer.start()
        try:
            sess.run(None, feeds, options)
        finally:
            if timer:
                timer.cancel()


def _op_types(data: bytes) -> str:
    """The top graph's op types, which tell one hang from another."""
    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except Exception:  # noqa: BLE001 - only a label
        return "?"
    return "+".join(sorted({str(n.op_type) for n in m.graph.node})) or "no nodes"


def _on_alarm(signum, frame):
    raise CaseTimeout()


def classify(data: bytes, limit_s: float = 10.0) -> tuple[str, str]:
    """("ok" | "typed" | "terminated" | "escape" | "hang", detail). A run still going at half the
    limit is cancelled (``terminated`` when that stops it); one still going at the limit, or a load
    that long, is a hang. The limit needs the main thread (SIGALRM)."""
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        run_case(data, cancel_after_s=limit_s / 2)
        return "ok", ""
    except CaseTimeout:
        return "hang", f"over {limit_s}s in a graph of {_op_types(data)}"
    except RunTerminatedError:
        return "terminated", _op_types(data)
    except OnnxplugError as e:
        return "typed", type(e).__name__
    except Exception as e:  # noqa: BLE001 - the point is to see every other exception
        tb = traceback.extract_tb(e.__traceback__)
        where = f"{tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else "?"
        return "escape", f"{type(e).__name__} at {where}: {str(e)[:120]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_SEEDS = seed_models()


def fuzz(cases: int, seed: int, limit_s: float = 10.0, start: int = 0, report=None) -> dict:
    """Run cases [start, start+cases); returns counts and the first index of each distinct finding."""
    counts: collections.Counter = collections.Counter()
    findings: dict[str, int] = {}
    for index in range(start, start + cases):
        outcome, detail = classify(make_case(seed, index), limit_s)
        counts[outcome] += 1
        if outcome in ("escape", "hang"):
            key = f"{outcome}: {detail.rsplit(': ', 1)[0] if outcome == 'escape' else detail}"
            if key not in findings:
                findings[key] = index
                if report:
                    report(f"case {index}: {outcome}: {detail}")
    return {"counts": dict(counts), "findings": findings}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--limit", type=float, default=10.0, help="seconds per case before it counts as a hang")
    p.add_argument("--max-memory-gb", type=float, default=4.0, help="address-space limit, so a huge allocation fails")
    args = p.parse_args(argv)
    import resource
    cap = int(args.max_memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    t0 = time.perf_counter()
    result = fuzz(args.cases, args.seed, args.limit, args.start, report=lambda s: print(s, flush=True))
    elapsed = time.perf_counter() - t0
    print(f"{args.cases} cases (seed {args.seed}, from {args.start}) in {elapsed:.0f}s: {result['counts']}")
    for key, index in result["findings"].items():
        print(f"  first at case {index}: {key}")
    return 1 if result["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
