"""Batch inference on Dask: ``dask.array.map_blocks`` and ``dask.dataframe.map_partitions``.

    from onnxplug.integrations import dask as onnx_dask
    probs = onnx_dask.score_array(images, "model.onnx")            # rows along axis 0
    scored = onnx_dask.score_frame(ddf, "model.onnx", inputs={"x": ["f0", "f1"]})

Each task carries a :class:`ScoringSpec` (the model's path or bytes, options as a plain dict,
providers); a worker builds one session per spec on its first block and reuses it for every later
block and thread: sessions are never pickled. A worker's ``intra_op_num_threads`` defaults to 1, as
Dask runs one block per thread. A provider a worker lacks is skipped with a warning; dataframes get
``onnxplug_worker``/``onnxplug_providers`` columns (:func:`report`). Task keys start with
``onnxplug-score``; a lost worker's blocks are rerun elsewhere, each block's rows in order.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from onnxplug.integrations._common import (
    PROVIDERS_COLUMN,
    WORKER_COLUMN,
    ScoringSpec,
    WorkerReport,
    kept_columns,
    model_signature,
    output_frame,
    process_report,
    scorer_for,
    session_options_to_dict,
    summarize,
)

__all__ = ["score_array", "score_frame", "report", "worker_sessions", "session_options_to_dict",
           "WorkerReport", "WORKER_COLUMN", "PROVIDERS_COLUMN"]

TOKEN = "onnxplug-score"
#: intra_op_num_threads of a worker's session unless the options set it: one per Dask thread
DEFAULT_THREADS = 1


def _score_block(block: np.ndarray, spec: ScoringSpec, feed_name: str, output_name: str) -> np.ndarray:
    scorer = scorer_for(spec, DEFAULT_THREADS)
    return scorer.run(scorer.feeds({feed_name: block}))[output_name]


def score_array(x: Any, model: Any, *, session_options: Any = None, providers: Sequence[Any] | None = None,
                input_name: str | None = None, output: str | None = None,
                output_shape: Sequence[int] | None = None) -> Any:
    """One model output for a dask array of rows (axis 0), block by block, rows in order.

    ``x`` feeds ``input_name`` (default: the model's only input) and is rechunked to whole rows.
    ``output`` defaults to the first output; its shape past the batch axis comes from the model,
    or from ``output_shape`` where the model leaves it symbolic."""
    inputs, sig = model_signature(model if isinstance(model, bytes) else str(model))
    if input_name is None:
        if len(inputs) != 1:
            raise ValueError(f"the model has inputs {inputs}: name the one the array feeds with input_name=")
        input_name = inputs[0]
    output = output or next(iter(sig))
    dtype, dims = sig[output]
    dims = tuple(output_shape) if output_shape is not None else dims
    if any(d is None for d in dims):
        raise ValueError(f"output {output!r} has symbolic dimensions past the batch axis {dims}: pass output_shape=")
    spec = ScoringSpec.create(model, session_options, providers, outputs=[output], report=False)
    if x.ndim > 1:
        x = x.rechunk({i: -1 for i in range(1, x.ndim)})
    ndim = 1 + len(dims)
    axes = {"drop_axis": list(range(ndim, x.ndim))} if ndim < x.ndim else \
        {"new_axis": list(range(x.ndim, ndim))} if ndim > x.ndim else {}
    return x.map_blocks(_score_block, spec=spec, feed_name=input_name, output_name=output, dtype=dtype,
                        chunks=(x.chunks[0], *((d,) for d in dims)), token=TOKEN,
                        meta=np.empty((0,) * ndim, dtype), **axes)


def _score_partition(frame: Any, spec: ScoringSpec) -> Any:
    return scorer_for(spec, DEFAULT_THREADS).score_pandas(frame)


def score_frame(ddf: Any, model: Any, *, session_options: Any = None, providers: Sequence[Any] | None = None,
                inputs: Mapping[str, Any] | None = None, outputs: Sequence[str] | None = None,
                keep_columns: Sequence[str] | None = None, report: bool = True) -> Any:
    """A dask DataFrame with the model's outputs as columns, partition by partition, rows and index
    in order. ``inputs``: model input -> column (of per-row arrays), or -> list of scalar columns
    stacked into a matrix. An output with more than one value per row is a column of arrays."""
    spec = ScoringSpec.create(model, session_options, providers, inputs, outputs, keep_columns, report)
    names, sig = model_signature(spec.model)
    wanted = list(outputs) if outputs else list(sig)
    meta_in = ddf._meta
    kept = meta_in[kept_columns(spec, names, list(meta_in.columns), wanted)]
    empty = {n: np.empty((0, *(d or 1 for d in sig[n][1])), sig[n][0]) for n in wanted}
    meta = output_frame(kept, empty, ("", "") if report else None)
    return ddf.map_partitions(_score_partition, spec, meta=meta)


def report(result: Any) -> list[WorkerReport]:
    """Rows per worker process and the providers that ran them, from a scored dask DataFrame
    (computed again unless persisted) or its computed pandas frame."""
    if hasattr(result, "dask") or hasattr(result, "expr"):
        result = result[[WORKER_COLUMN, PROVIDERS_COLUMN]].compute()
    return summarize(result)


def worker_sessions(client: Any) -> dict[str, list[dict[str, Any]]]:
    """Every worker's sessions, by worker address: providers that ran, threads, rows scored since
    the process started, and the warnings of the session's creation (a provider skipped)."""
    return client.run(process_report)
