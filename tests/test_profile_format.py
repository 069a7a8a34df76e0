"""The profile is onnxruntime's: Chrome trace events, its Session events, one Node event per step
run (bodies of If/Loop included) with onnxruntime's arg keys, copies as Memcpy nodes."""

from __future__ import annotations

import json
from collections import Counter

import jsonschema
import numpy as np
import onnxplug as ort
import onnxruntime
from onnxplug.cli import main
from onnxplug.plugins import get_catalog
from onnxplug.testing.model_suite import build, sample_inputs

from tests.mixing_provider import MixingProvider
from tests.test_profiling import _control_flow_model, _feeds

#: the trace-event format's "complete" events (ph "X"), as a JSON array, with onnxruntime's fields
TRACE_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["cat", "name", "ph", "ts", "dur", "pid", "tid", "args"],
        "properties": {
            "cat": {"enum": ["Session", "Node"]},
            "name": {"type": "string", "minLength": 1},
            "ph": {"const": "X"},
            "ts": {"type": "number", "minimum": 0},
            "dur": {"type": "number", "minimum": 0},
            "pid": {"type": "integer"},
            "tid": {"type": "integer"},
            "args": {"type": "object"},
        },
        "if": {"properties": {"cat": {"const": "Node"}}},
        "then": {"properties": {"name": {"pattern": "_kernel_time$"}, "args": {
            "required": ["op_name", "provider", "input_type_shape", "output_type_shape", "activation_size",
                         "parameter_size", "output_size"],
            "properties": {
                "input_type_shape": {"$ref": "#/$defs/type_shapes"},
                "output_type_shape": {"$ref": "#/$defs/type_shapes"},
                "activation_size": {"type": "string", "pattern": "^[0-9]+$"},
                "parameter_size": {"type": "string", "pattern": "^[0-9]+$"},
            }}}},
    },
    "$defs": {"type_shapes": {"type": "array", "items": {
        "type": "object", "maxProperties": 1,
        "additionalProperties": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "integer"}]}}}},
}

NODE_ARGS = {"op_name", "provider", "input_type_shape", "output_type_shape", "activation_size", "parameter_size",
             "output_size"}


def _profile(model, feeds, tmp_path, providers=("numpy",), level=None):
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    if level is not None:
        so.graph_optimization_level = level
    sess = ort.InferenceSession(model, so, providers=list(providers))
    sess.run(None, feeds)
    with open(sess.end_profiling()) as f:
        return json.load(f)


def test_profile_validates_and_has_one_node_event_per_executed_node(tmp_path):
    events = _profile(_control_flow_model(), _feeds(), tmp_path,
                      level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    jsonschema.validate(events, TRACE_SCHEMA)
    nodes = Counter(e["name"] for e in events if e["cat"] == "Node")
    # If runs its then branch once; the Loop runs its two body nodes three times
    assert nodes == {"branch_kernel_time": 1, "then_add_kernel_time": 1, "loop_kernel_time": 1,
                     "body_cond_kernel_time": 3, "body_add_kernel_time": 3}
    sessions = [e["name"] for e in events if e["cat"] == "Session"]
    assert sessions == ["model_loading_array", "session_initialization", "model_run"]
    loop = next(e for e in events if e["name"] == "loop_kernel_time")
    for body in (e for e in events if e["name"] == "body_add_kernel_time"):
        assert body["args"]["parent"] == "loop" and body["tid"] == loop["tid"]
        # nested in time, so a trace viewer draws it under the Loop
        assert loop["ts"] <= body["ts"] and body["ts"] + body["dur"] <= loop["ts"] + loop["dur"] + 1e-3
        assert body["args"]["input_type_shape"] == [{"float": [3]}, {"float": [3]}]
        assert body["args"]["output_type_shape"] == [{"float": [3]}]


def test_node_args_are_onnxruntimes_and_agree_on_the_loop_model(tmp_path):
    model = build("loop_model")
    feeds = sample_inputs("loop_model")
    # unoptimised, so the body is the model's (onnxruntime's optimizer leaves these nodes as they are)
    ours = _profile(model.SerializeToString(), feeds, tmp_path, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    jsonschema.validate(ours, TRACE_SCHEMA)
    so = onnxruntime.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "ort")
    sess = onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    sess.run(None, feeds)
    with open(sess.end_profiling()) as f:
        theirs = json.load(f)
    jsonschema.validate(theirs, TRACE_SCHEMA)  # the schema is onnxruntime's format, not only ours
    their_keys = set.intersection(*(set(e["args"]) for e in theirs if e["cat"] == "Node"))
    assert NODE_ARGS <= their_keys
    ours_by_name = {e["name"]: e for e in ours if e["cat"] == "Node"}
    theirs_by_name = {e["name"]: e for e in theirs if e["cat"] == "Node"}
    assert "/loop/body/Gather_kernel_time" in ours_by_name  # a Loop body node
    for name in ("/loop/Loop_kernel_time", "/loop/body/Gather_kernel_time"):
        for key in ("op_name", "input_type_shape", "output_type_shape"):
            assert ours_by_name[name]["args"][key] == theirs_by_name[name]["args"][key], (name, key)
    assert {e["name"] for e in ours if e["cat"] == "Session"} >= {"model_loading_array", "session_initialization",
                                                                  "model_run"}


def test_copies_are_memcpy_nodes(tmp_path, add_relu_model):
    get_catalog().register(MixingProvider, "tests")
    try:
        events = _profile(add_relu_model, {"x": np.ones((1, 4), np.float32)}, tmp_path, providers=["mixing"])
    finally:
        get_catalog().providers.pop("mixing", None)
    jsonschema.validate(events, TRACE_SCHEMA)
    ops = Counter(e["args"]["op_name"] for e in events if e["cat"] == "Node")
    assert ops == {"MemcpyFromHost": 1, "Add": 1, "Relu": 1, "MemcpyToHost": 1}
    assert {e["args"]["provider"] for e in events if e["cat"] == "Node"} == {"mixing"}


def test_profile_command_summarises(tmp_path, capsys):
    events = _profile(_control_flow_model(), _feeds(), tmp_path, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(events))
    assert main(["profile", str(path)]) == 0
    out = capsys.readouterr().out
    assert "runs: 1" in out
    assert "by op type" in out and "by provider" in out and "top nodes" in out
    add_line = next(line for line in out.splitlines() if line.split()[:1] == ["Add"])
    assert add_line.split()[1] == "4"  # then_add once, body_add three times
    assert "copies: 0 event(s)" in out and "kernel compilation: 0 event(s)" in out


def test_profile_command_refuses_what_is_not_a_trace(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text('{"x": 1}')
    assert main(["profile", str(path)]) == 1
    assert "bad.json: not a Chrome trace" in capsys.readouterr().err
