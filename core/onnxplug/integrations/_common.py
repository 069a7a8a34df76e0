"""What the Ray and Dask integrations share: a picklable description of the scoring job, one
session per worker process built from it, batches turned into feeds and outputs into columns, and
the per-worker report.

Invariants: an :class:`~onnxplug.InferenceSession` is never pickled. :class:`ScoringSpec` carries
the model as a path or bytes and the session options as a plain dict of onnxruntime option names
(:func:`session_options_to_dict`), so it travels to workers whatever the engine's serializer. A
process builds one session per spec key (:func:`scorer_for`) and reuses it for every batch. Rows
leave a batch in the order they came, one output row per input row.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import socket
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

#: Column naming the worker process that scored a row ("host:pid").
WORKER_COLUMN = "onnxplug_worker"
#: Column naming the providers that ran the row's batch, in priority order, comma-separated.
PROVIDERS_COLUMN = "onnxplug_providers"


def session_options_to_dict(options: Any) -> dict[str, Any]:
    """An :class:`onnxplug.SessionOptions` (or a dict of the same form) as a plain dict of
    onnxruntime's attribute names, plus ``session_config`` and ``free_dimension_overrides``.

    Provider choices made on the options (``add_provider``, policies) are not carried: name the
    providers with ``providers=`` instead."""
    if options is None:
        return {}
    if isinstance(options, Mapping):
        out = dict(options)
    else:
        out = {k: v for k, v in vars(options).items() if not k.startswith("_")}
        config = dict(getattr(options, "_config", {}))
        dims = dict(getattr(options, "free_dimension_overrides", {}) or {})
        if config:
            out["session_config"] = config
        if dims:
            out["free_dimension_overrides"] = dims
    plain = {k: int(v) if isinstance(v, enum.Enum) else v for k, v in out.items()}
    session_options_from_dict(plain)  # refuse a bad option here, not on every worker
    return plain


def session_options_from_dict(options: Mapping[str, Any]) -> Any:
    """The :class:`onnxplug.SessionOptions` that :func:`session_options_to_dict` describes."""
    from onnxplug import SessionOptions

    so = SessionOptions()
    for key, value in options.items():
        if key == "session_config":
            for name, entry in value.items():
                so.add_session_config_entry(name, entry)
        elif key == "free_dimension_overrides":
            for name, size in value.items():
                so.add_free_dimension_override_by_name(name, size)
        else:
            setattr(so, key, value)
    return so


@dataclass(frozen=True)
class ScoringSpec:
    """Everything a worker needs to score batches; cheap to pickle apart from the model bytes.

    ``inputs`` maps a model input to the column that feeds it, or to a list of scalar columns
    stacked side by side (a tabular model's feature matrix); an input it does not name is fed by
    the column of its own name. ``keep_columns``: the columns copied to the output batch besides
    the model's outputs (default: every column that feeds no input). ``report`` adds
    :data:`WORKER_COLUMN` and :data:`PROVIDERS_COLUMN`."""

    model: str | bytes
    session_options: dict[str, Any] = field(default_factory=dict)
    providers: tuple[Any, ...] | None = None
    inputs: tuple[tuple[str, Any], ...] = ()
    outputs: tuple[str, ...] | None = None
    keep_columns: tuple[str, ...] | None = None
    report: bool = True
    key: str = ""

    @classmethod
    def create(cls, model: Any, session_options: Any = None, providers: Sequence[Any] | None = None,
               inputs: Mapping[str, Any] | None = None, outputs: Sequence[str] | None = None,
               keep_columns: Sequence[str] | None = None, report: bool = True) -> "ScoringSpec":
        """Check the arguments and compute the cache key (the model's digest, options, providers)."""
        if isinstance(model, (bytes, bytearray, memoryview)):
            model = bytes(model)
            ident = "sha256:" + hashlib.sha256(model).hexdigest()
        elif isinstance(model, (str, os.PathLike)):
            model = os.fspath(model)
            ident = "path:" + model
        else:
            raise TypeError(f"model must be a path or bytes, not {type(model).__name__}")
        opts = session_options_to_dict(session_options)
        provs = None if providers is None else tuple(
            p if isinstance(p, str) else (p[0], dict(p[1])) for p in providers)
        key = hashlib.sha256(json.dumps([ident, opts, provs], sort_keys=True, default=str).encode()).hexdigest()
        ins = tuple((name, tuple(col) if isinstance(col, (list, tuple)) else col)
                    for name, col in (inputs or {}).items())
        return cls(model, opts, provs, ins, None if outputs is None else tuple(outputs),
                   None if keep_columns is None else tuple(keep_columns), report, key)


def worker_name() -> str:
    """This process as the report names it: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


class Scorer:
    """One session built from a spec in this process, and the batch conversions around it."""

    def __init__(self, spec: ScoringSpec, default_threads: int | None = None) -> None:
        from onnxplug import InferenceSession

        options = dict(spec.session_options)
        if default_threads and not options.get("intra_op_num_threads"):
            options["intra_op_num_threads"] = int(default_threads)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.session = InferenceSession(spec.model, session_options_from_dict(options),
                                            providers=list(spec.providers) if spec.providers else None)
        for w in caught:  # shown in the worker's log as a session shows them
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        self.warnings = [str(w.message) for w in caught]
        self.spec = spec
        self.intra_op_num_threads = int(options.get("intra_op_num_threads", 0))
        assigned = {a.provider for a in self.session.get_node_assignments()}
        #: the providers that run at least one node, in the session's priority order
        self.providers = [p for p in self.session.get_providers() if p in assigned] or self.session.get_providers()
        self.input_types = {i.name: i.type for i in self.session.get_inputs()}
        self.output_names = list(spec.outputs) if spec.outputs else [o.name for o in self.session.get_outputs()]
        self.feed_columns = dict(spec.inputs)
        for name in self.input_types:
            self.feed_columns.setdefault(name, name)
        self.rows = 0
        self._lock = threading.Lock()

    def _feed(self, column: Any) -> np.ndarray:
        arr = np.asarray(column.to_numpy() if hasattr(column, "to_numpy") else column)
        if arr.dtype == object:  # a pandas column holding one array per row
            arr = np.stack(list(arr))
        return arr

    def feeds(self, batch: Any) -> dict[str, np.ndarray]:
        """The model's feeds from a numpy-format batch (dict of arrays) or a pandas DataFrame,
        cast to each input's declared element type."""
        out = {}
        for name, col in self.feed_columns.items():
            if name not in self.input_types:
                continue
            if isinstance(col, tuple):
                arr = np.stack([self._feed(batch[c]) for c in col], axis=1)
            else:
                arr = self._feed(batch[col])
            want = _numpy_type(self.input_types[name])
            out[name] = np.ascontiguousarray(arr, dtype=want if want is not None else arr.dtype)
        return out

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the session; one row out per row in."""
        results = self.session.run(self.output_names, dict(feeds))
        with self._lock:
            self.rows += len(next(iter(feeds.values()))) if feeds else 0
        return dict(zip(self.output_names, results))

    def kept_columns(self, columns: Sequence[str]) -> list[str]:
        """The input columns copied to the output batch."""
        return kept_columns(self.spec, self.input_types, columns, self.output_names)

    def score_numpy(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A numpy-format batch in, a numpy-format batch out."""
        results = self.run(self.feeds(batch))
        n = len(next(iter(results.values())))
        out = {c: batch[c] for c in self.kept_columns(list(batch))}
        out.update(results)
        if self.spec.report:
            out[WORKER_COLUMN] = np.full(n, worker_name())
            out[PROVIDERS_COLUMN] = np.full(n, ",".join(self.providers))
        return out

    def score_pandas(self, frame: Any) -> Any:
        """A pandas DataFrame in, a DataFrame out with the same index; an output with more than
        one value per row becomes a column of arrays."""
        results = self.run(self.feeds(frame))
        return output_frame(frame[self.kept_columns(list(frame.columns))], results,
                            (worker_name(), ",".join(self.providers)) if self.spec.report else None)


def kept_columns(spec: ScoringSpec, input_names: Sequence[str], columns: Sequence[str],
                 output_names: Sequence[str]) -> list[str]:
    """The columns of a batch copied to the output: ``spec.keep_columns``, or those that feed no input."""
    if spec.keep_columns is not None:
        return list(spec.keep_columns)
    feeding = dict(spec.inputs)
    fed = set()
    for name in input_names:
        col = feeding.get(name, name)
        fed.update(col if isinstance(col, tuple) else (col,))
    return [c for c in columns if c not in fed and c not in output_names]


def output_frame(kept: Any, results: Mapping[str, np.ndarray], report: tuple[str, str] | None) -> Any:
    """``kept`` (a DataFrame) with one column per output and the report columns appended."""
    frame = kept.copy()
    for name, arr in results.items():
        frame[name] = list(arr) if arr.ndim > 1 else arr
    if report is not None:
        frame[WORKER_COLUMN] = report[0]
        frame[PROVIDERS_COLUMN] = report[1]
    return frame


_TYPES = {"float": np.float32, "double": np.float64, "float16": np.float16, "int8": np.int8, "int16": np.int16,
          "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
          "uint64": np.uint64, "bool": np.bool_}


def _numpy_type(ort_type: str) -> Any:
    """numpy's type for onnxruntime's ``tensor(float)`` form, or None (left as fed)."""
    if ort_type.startswith("tensor(") and ort_type.endswith(")"):
        return _TYPES.get(ort_type[len("tensor("):-1])
    return None


_CACHE: dict[str, Scorer] = {}
_CACHE_LOCK = threading.Lock()


def scorer_for(spec: ScoringSpec, default_threads: int | None = None) -> Scorer:
    """This process's scorer for ``spec``, built on first use (a lock keeps it to one build)."""
    with _CACHE_LOCK:
        scorer = _CACHE.get(spec.key)
        if scorer is None:
            scorer = _CACHE[spec.key] = Scorer(spec, default_threads)
        return scorer


def process_report() -> list[dict[str, Any]]:
    """This process's sessions: worker, providers that ran, threads, rows scored, warnings."""
    with _CACHE_LOCK:
        return [{"worker": worker_name(), "providers": list(s.providers), "threads": s.intra_op_num_threads,
                 "rows": s.rows, "warnings": list(s.warnings), "key": key[:12]} for key, s in _CACHE.items()]


class WorkerReport(NamedTuple):
    """One worker process's share of a job: which providers ran its batches, and how many rows."""

    worker: str
    providers: tuple[str, ...]
    rows: int


def summarize(result: Any) -> list[WorkerReport]:
    """Per worker and provider list, the rows scored, from a job's output with the report columns
    (a pandas DataFrame, a dict of arrays, or a list of either), sorted by worker."""
    parts = result if isinstance(result, list) else [result]
    counts: dict[tuple[str, str], int] = {}
    for part in parts:
        workers = np.asarray(part[WORKER_COLUMN]).astype(str)
        providers = np.asarray(part[PROVIDERS_COLUMN]).astype(str)
        pairs, n = np.unique(np.stack([workers, providers], axis=1), axis=0, return_counts=True) \
            if len(workers) else (np.empty((0, 2)), np.empty(0, int))
        for (w, p), c in zip(pairs, n):
            counts[(str(w), str(p))] = counts.get((str(w), str(p)), 0) + int(c)
    return [WorkerReport(w, tuple(p.split(",")) if p else (), c) for (w, p), c in sorted(counts.items())]


def model_signature(model: str | bytes) -> tuple[list[str], dict[str, tuple[Any, tuple]]]:
    """The model's graph input names (initializers excluded), and each output's numpy type and shape
    past the batch axis (None where symbolic), read from the declared graph without a session."""
    import onnx

    proto = onnx.load_model_from_string(model) if isinstance(model, bytes) else onnx.load(model, load_external_data=False)
    inits = {i.name for i in proto.graph.initializer}
    inputs = [vi.name for vi in proto.graph.input if vi.name not in inits]
    outputs = {}
    for vi in proto.graph.output:
        t = vi.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim[1:])
        outputs[vi.name] = (onnx.helper.tensor_dtype_to_np_dtype(t.elem_type), dims)
    return inputs, outputs
