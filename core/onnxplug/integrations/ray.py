"""Batch inference on Ray Data: a callable class for ``Dataset.map_batches`` on an actor pool.

    from onnxplug.integrations import ray as onnx_ray
    scored = onnx_ray.score(ds, "model.onnx", concurrency=2, batch_size=256)

Each actor builds one session in ``__init__`` (from a path every node can read, or the model's bytes)
and keeps it for every batch; sessions are never pickled, and options travel as a plain dict
(:func:`session_options_to_dict`). An actor's ``intra_op_num_threads`` defaults to its CPU share, so
the actors of one machine do not oversubscribe it. A provider an actor's node lacks is skipped with a
warning, as a session does; the ``onnxplug_worker`` and ``onnxplug_providers`` columns say which
process scored each row on which providers (:func:`report` sums them up).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

from onnxplug.integrations._common import (
    PROVIDERS_COLUMN,
    WORKER_COLUMN,
    ScoringSpec,
    WorkerReport,
    scorer_for,
    session_options_to_dict,
    summarize,
)

__all__ = ["OnnxScorer", "score", "report", "cpu_share", "session_options_to_dict", "WorkerReport",
           "WORKER_COLUMN", "PROVIDERS_COLUMN"]


def cpu_share() -> int | None:
    """The whole CPUs Ray assigned to this actor or task (at least 1), or None outside Ray."""
    import ray

    try:
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
    except Exception:  # not in a Ray worker
        return None
    return max(1, int(cpus)) if cpus else None


class OnnxScorer:
    """Scores Ray Data batches (numpy dicts or pandas DataFrames) with one session per actor.

    ``model``: a path readable on every node, or the model's bytes. ``session_options``: an
    :class:`onnxplug.SessionOptions` or its dict form. ``providers``: as ``InferenceSession``'s.
    ``inputs``: model input -> column, or -> list of scalar columns stacked into a matrix.
    ``outputs``: the outputs to compute (default all), each becoming a column of its name.
    ``keep_columns``: input columns copied to the output (default: those that feed no input).
    ``report``: add the worker and providers columns.

    By hand: ``ds.map_batches(OnnxScorer, fn_constructor_kwargs={"model": ...},
    compute=ray.data.ActorPoolStrategy(size=2), num_cpus=1)``; progress is Ray Data's own display
    (the ``MapBatches(OnnxScorer)`` operator's bar)."""

    def __init__(self, model: Any = None, session_options: Any = None, providers: Sequence[Any] | None = None,
                 inputs: Mapping[str, Any] | None = None, outputs: Sequence[str] | None = None,
                 keep_columns: Sequence[str] | None = None, report: bool = True,
                 spec: ScoringSpec | None = None, model_bytes: bytes | None = None) -> None:
        if spec is None:
            spec = ScoringSpec.create(model, session_options, providers, inputs, outputs, keep_columns, report)
        if model_bytes is not None:  # the bytes score() put in the object store
            if not isinstance(model_bytes, bytes):  # a reference Ray did not resolve on the way
                import ray

                model_bytes = ray.get(model_bytes)
            spec = dataclasses.replace(spec, model=model_bytes)
        self._scorer = scorer_for(spec, default_threads=cpu_share())

    @property
    def providers(self) -> list[str]:
        """The providers that run this actor's session."""
        return list(self._scorer.providers)

    def __call__(self, batch: Any) -> Any:
        if isinstance(batch, Mapping):
            return self._scorer.score_numpy(batch)
        if hasattr(batch, "iloc"):
            return self._scorer.score_pandas(batch)
        raise TypeError(f"batches must be numpy dicts or pandas DataFrames (batch_format='numpy' or 'pandas'), "
                        f"not {type(batch).__name__}")


def score(ds: Any, model: Any, *, session_options: Any = None, providers: Sequence[Any] | None = None,
          inputs: Mapping[str, Any] | None = None, outputs: Sequence[str] | None = None,
          keep_columns: Sequence[str] | None = None, report: bool = True, concurrency: int = 1,
          num_cpus: float = 1, batch_size: int | None = 256, batch_format: str = "numpy",
          **map_batches_kwargs: Any) -> Any:
    """``ds.map_batches(OnnxScorer, ...)`` on a pool of ``concurrency`` actors of ``num_cpus`` each.

    The spec (model, options as a dict, providers) is built and checked here, then shipped to each
    actor once; model bytes go through the object store (``ray.put``), a path as it is. Other keyword arguments go to ``map_batches``. Ray Data's actor pools restart an
    actor that dies and run the batches it held again (its defaults ``max_restarts=-1``,
    ``max_task_retries=-1``; pass them to change that), so every row comes out once."""
    import ray.data

    import ray

    spec = ScoringSpec.create(model, session_options, providers, inputs, outputs, keep_columns, report)
    kwargs: dict[str, Any] = {"spec": spec}
    if isinstance(spec.model, bytes):
        # once in the object store rather than inside every actor's pickled constructor arguments
        kwargs = {"spec": dataclasses.replace(spec, model=b""), "model_bytes": ray.put(spec.model)}
    return ds.map_batches(OnnxScorer, fn_constructor_kwargs=kwargs,
                          compute=ray.data.ActorPoolStrategy(size=concurrency), num_cpus=num_cpus,
                          batch_size=batch_size, batch_format=batch_format, **map_batches_kwargs)


def report(result: Any) -> list[WorkerReport]:
    """Rows per worker process and the providers that ran them, from a scored Dataset (executed
    again unless materialized: call ``materialize()`` first), a pandas DataFrame or numpy batches."""
    if hasattr(result, "select_columns"):
        result = result.select_columns([WORKER_COLUMN, PROVIDERS_COLUMN]).to_pandas()
    return summarize(result)
