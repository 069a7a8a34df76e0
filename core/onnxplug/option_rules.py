"""What onnxplug does with each of onnxruntime's options: one table, the rule options.py applies.

Every option name onnxruntime takes (``SessionOptions`` and ``RunOptions`` attributes, session and
run config keys, the documented options of its CPU and CUDA providers) has one :class:`Rule`:
``implemented`` (onnxplug acts on it); ``tuning`` (it only tunes onnxruntime's internals, so any
value is accepted, logged at verbose severity by ``onnxplug.options``, without effect on results);
or ``refused`` (it would change results or behaviour onnxplug does not implement: it raises
:class:`~onnxplug.errors.UnsupportedOptionError` naming it and saying why, except at the
``accepted`` values, which are what onnxplug does anyway). A name the table does not have is
refused. ``docs/onnxruntime-options.md`` holds the table as :func:`markdown_table` renders it (a
test compares them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from onnxplug import logs
from onnxplug.errors import UnsupportedOptionError

IMPLEMENTED, TUNING, REFUSED = "implemented", "tuning", "refused"

SESSION_OPTIONS, RUN_OPTIONS = "SessionOptions", "RunOptions"
SESSION_CONFIG, RUN_CONFIG = "session config", "run config"
CPU_EP, CUDA_EP = "CPUExecutionProvider", "CUDAExecutionProvider"

_log = logs.get_logger("onnxplug.options")


@dataclass(frozen=True)
class Rule:
    """What one option does here. ``accepted`` (refused options only): the values onnxplug takes
    because they are its own behaviour, compared as strings (``True`` as ``"1"``)."""

    scope: str
    name: str
    status: str
    what: str
    accepted: tuple[str, ...] = ()


_MEMORY = ("onnxplug allocates each value as a kernel computes it (numpy's allocator; host memory is "
           "kept for reuse by `enable_cpu_mem_arena`)")
_THREADS = "onnxplug's providers run their own threads (`intra_op_num_threads`); there is no onnxruntime thread pool"
_CUPY = "the `cupy` provider"

_RULES: tuple[Rule, ...] = (
    # --- SessionOptions attributes -------------------------------------------------------------
    Rule(SESSION_OPTIONS, "graph_optimization_level", IMPLEMENTED, "selects the optimizer passes (docs/optimizer.md)"),
    Rule(SESSION_OPTIONS, "intra_op_num_threads", IMPLEMENTED, "threads each provider computes with (0: one per core)"),
    Rule(SESSION_OPTIONS, "enable_profiling", IMPLEMENTED, "records a Chrome trace of each run; "
         "`end_profiling()` writes it"),
    Rule(SESSION_OPTIONS, "profile_file_prefix", IMPLEMENTED, "the profile's file name prefix"),
    Rule(SESSION_OPTIONS, "optimized_model_filepath", IMPLEMENTED, "saves the optimized model (ONNX format)"),
    Rule(SESSION_OPTIONS, "log_severity_level", IMPLEMENTED, "what session creation reports (README, Session "
         "options)"),
    Rule(SESSION_OPTIONS, "log_verbosity_level", IMPLEMENTED, "kept; onnxplug's verbose messages have one level "
         "of detail"),
    Rule(SESSION_OPTIONS, "logid", IMPLEMENTED, "kept as the session's log id"),
    Rule(SESSION_OPTIONS, "enable_cpu_mem_arena", IMPLEMENTED, "keeps freed host memory for the next run "
         "(process-wide)"),
    Rule(SESSION_OPTIONS, "enable_mem_pattern", TUNING, f"onnxruntime plans buffer offsets from earlier runs' "
         f"shapes; {_MEMORY}"),
    Rule(SESSION_OPTIONS, "enable_mem_reuse", TUNING, f"onnxruntime's planner reuses buffers between nodes; {_MEMORY}"),
    Rule(SESSION_OPTIONS, "execution_mode", TUNING, "ORT_PARALLEL runs independent nodes concurrently in onnxruntime; "
         "onnxplug runs nodes one after another (ORT_SEQUENTIAL), which gives the same results"),
    Rule(SESSION_OPTIONS, "execution_order", TUNING, "orders independent nodes in onnxruntime; onnxplug runs a "
         "topological order, which gives the same results"),
    Rule(SESSION_OPTIONS, "inter_op_num_threads", TUNING, "onnxruntime's pool for ORT_PARALLEL; nodes run one after "
         "another on the calling thread here"),
    Rule(SESSION_OPTIONS, "use_deterministic_compute", TUNING, "turns off onnxruntime's non-deterministic kernels "
         "(algorithm search by timing, atomic sums); onnxplug's kernels choose no algorithm by timing and sum "
         "without atomics"),
    Rule(SESSION_OPTIONS, "use_per_session_threads", TUNING, f"onnxruntime's global thread pools; {_THREADS}"),
    # --- RunOptions attributes -----------------------------------------------------------------
    Rule(RUN_OPTIONS, "log_severity_level", IMPLEMENTED, "kept with the run options"),
    Rule(RUN_OPTIONS, "log_verbosity_level", IMPLEMENTED, "kept with the run options"),
    Rule(RUN_OPTIONS, "logid", IMPLEMENTED, "kept with the run options"),
    Rule(RUN_OPTIONS, "run_tag", IMPLEMENTED, "kept with the run options (onnxplug's name; onnxruntime has `logid`)"),
    Rule(RUN_OPTIONS, "only_execute_path_to_fetches", TUNING, "computes only what the requested outputs need in "
         "onnxruntime; the requested outputs are the same either way"),
    Rule(RUN_OPTIONS, "terminate", IMPLEMENTED, "True, set from another thread, stops the run before it starts "
         "or at its next Loop iteration or Scan/If body call with `RunTerminatedError` (IOBinding runs too); a "
         "single kernel call is not interrupted"),
    # --- session config entries (add_session_config_entry) ------------------------------------
    Rule(SESSION_CONFIG, "session.disable_cpu_ep_fallback", IMPLEMENTED, "'1' fails session creation when the "
         "requested providers leave nodes unclaimed, and does not add `numpy` last"),
    Rule(SESSION_CONFIG, "session.record_ep_graph_assignment_info", IMPLEMENTED, "'1' keeps the provider "
         "assignment for `InferenceSession.get_provider_graph_assignment_info()`"),
    Rule(SESSION_CONFIG, "session.onnxplug.max_allocation_bytes", IMPLEMENTED, "onnxplug's own: bytes one node "
         "may allocate (default half of physical memory, '0' no limit); a node that would allocate more fails "
         "with `AllocationLimitError` before allocating (docs/reliability.md)"),
    Rule(SESSION_CONFIG, "session.disable_prepacking", TUNING, "onnxruntime's weight prepacking; onnxplug's kernels "
         "prepare weights their own way"),
    Rule(SESSION_CONFIG, "session.use_env_allocators", TUNING, f"onnxruntime's shared allocators; {_MEMORY}"),
    Rule(SESSION_CONFIG, "session.use_device_allocator_for_initializers", TUNING, f"how onnxruntime allocates "
         f"weights; {_MEMORY}"),
    Rule(SESSION_CONFIG, "session.intra_op.allow_spinning", TUNING, f"whether idle pool threads spin; {_THREADS}"),
    Rule(SESSION_CONFIG, "session.inter_op.allow_spinning", TUNING, f"whether idle pool threads spin; {_THREADS}"),
    Rule(SESSION_CONFIG, "session.force_spinning_stop", TUNING, f"stops pool threads spinning after a run; {_THREADS}"),
    Rule(SESSION_CONFIG, "session.intra_op_thread_affinities", TUNING, f"pins pool threads to processors; {_THREADS}"),
    Rule(SESSION_CONFIG, "session.dynamic_block_base", TUNING, f"how the pool splits loops into blocks; {_THREADS}"),
    Rule(SESSION_CONFIG, "session.graph_optimizations_loop_level", TUNING, "how often onnxruntime repeats its "
         "optimizer levels; onnxplug's passes run as docs/optimizer.md says"),
    Rule(SESSION_CONFIG, "session.disable_aot_function_inlining", TUNING, "onnxplug inlines model-local functions "
         "when it loads the model; the results are the same"),
    Rule(SESSION_CONFIG, "session.disable_quant_qdq", TUNING, "onnxplug has no QDQ fusion: QuantizeLinear and "
         "DequantizeLinear run as written either way"),
    Rule(SESSION_CONFIG, "session.disable_double_qdq_remover", TUNING, "onnxplug has no double-QDQ remover: "
         "the nodes run as written either way"),
    Rule(SESSION_CONFIG, "session.qdqisint8allowed", TUNING, "how onnxruntime's QDQ transformer picks int8; "
         "onnxplug has no QDQ transformer"),
    Rule(SESSION_CONFIG, "session.x64quantprecision", TUNING, "picks U8U8 over U8S8 products in onnxruntime's "
         "x64 kernels; onnxplug's integer products are exact either way"),
    Rule(SESSION_CONFIG, "session.allow_released_opsets_only", TUNING, "onnxplug refuses opsets newer than the "
         "onnx package it runs with, whatever the value"),
    Rule(SESSION_CONFIG, "session.use_ort_model_bytes_directly", TUNING, "concerns ORT-format models only"),
    Rule(SESSION_CONFIG, "session.use_ort_model_bytes_for_initializers", TUNING, "concerns ORT-format models only"),
    Rule(SESSION_CONFIG, "optimization.minimal_build_optimizations", TUNING, "concerns ORT-format models only"),
    Rule(SESSION_CONFIG, "optimization.disable_specified_optimizers", TUNING, "names onnxruntime's passes; "
         "onnxplug's passes have their own names (docs/optimizer.md) and keep results; "
         "graph_optimization_level turns them off"),
    Rule(SESSION_CONFIG, "session.disable_synchronize_execution_providers", TUNING, "onnxplug synchronizes a "
         "device's outputs when it hands them over, whatever the value"),
    Rule(SESSION_CONFIG, "session.debug_layout_transformation", TUNING, "dumps onnxruntime's NHWC layout "
         "transformation steps; onnxplug writes no dumps"),
    Rule(SESSION_CONFIG, "session.save_external_prepacked_constant_initializers", TUNING,
         "onnxruntime's prepacked weights; onnxplug does not prepack into files"),
    Rule(SESSION_CONFIG, "session.disable_model_compile", TUNING, "onnxplug's providers compile kernels while the "
         "session is created and need no compiled model"),
    Rule(SESSION_CONFIG, "session.fail_on_suboptimal_compiled_model", TUNING, "concerns EP-context models only"),
    Rule(SESSION_CONFIG, "session.qdq_matmulnbits_accuracy_level", TUNING, "for onnxruntime's DQ + MatMul -> "
         "MatMulNBits fusion, which onnxplug does not do"),
    Rule(SESSION_CONFIG, "mlas.use_lut_gemm", TUNING, "an onnxruntime kernel choice for quantized products"),
    Rule(SESSION_CONFIG, "session.set_denormal_as_zero", REFUSED, "'1' flushes denormal floats to zero, which "
         "changes results; onnxplug computes with denormals", ("0",)),
    Rule(SESSION_CONFIG, "session.enable_quant_qdq_cleanup", REFUSED, "'1' removes Q -> DQ pairs, which changes "
         "results; onnxplug runs them as written", ("0",)),
    Rule(SESSION_CONFIG, "optimization.enable_gelu_approximation", REFUSED, "'1' replaces Gelu by its tanh "
         "approximation, which changes results; not implemented", ("0",)),
    Rule(SESSION_CONFIG, "optimization.enable_cast_chain_elimination", REFUSED, "'1' removes chains of Casts, "
         "which changes results; not implemented", ("0",)),
    Rule(SESSION_CONFIG, "mlas.enable_gemm_fastmath_arm64_bfloat16", REFUSED, "'1' computes float products in "
         "bfloat16, which changes results; not implemented", ("0",)),
    Rule(SESSION_CONFIG, "session.strict_shape_type_inference", REFUSED, "'1' fails models whose declared and "
         "inferred shapes conflict; onnxplug does not check that (it merges them as onnxruntime's default, '0')",
         ("0",)),
    Rule(SESSION_CONFIG, "session.load_model_format", REFUSED, "'ORT' loads onnxruntime's own model format, "
         "which onnxplug cannot read", ("ONNX",)),
    Rule(SESSION_CONFIG, "session.save_model_format", REFUSED, "'ORT' saves the optimized model in onnxruntime's "
         "own format, which onnxplug cannot write", ("ONNX",)),
    Rule(SESSION_CONFIG, "session.optimized_model_external_initializers_file_name", REFUSED, "onnxplug saves the "
         "optimized model with its weights inside"),
    Rule(SESSION_CONFIG, "session.optimized_model_external_initializers_min_size_in_bytes", REFUSED, "onnxplug "
         "saves the optimized model with its weights inside"),
    Rule(SESSION_CONFIG, "session.model_external_initializers_file_folder_path", REFUSED, "onnxplug reads "
         "external data next to a model loaded from its path only"),
    Rule(SESSION_CONFIG, "session.node_partition_config_file", REFUSED, "onnxplug's partitioner takes no "
         "assignment file"),
    Rule(SESSION_CONFIG, "session.collect_node_memory_stats_to_file", REFUSED, "onnxplug does not collect "
         "per-node memory statistics"),
    Rule(SESSION_CONFIG, "session.resource_cuda_partitioning_settings", REFUSED, "onnxplug's partitioner does "
         "not place nodes by memory statistics"),
    Rule(SESSION_CONFIG, "ep.context_enable", REFUSED, "'1' writes an EP-context model; onnxplug does not",
         ("0",)),
    Rule(SESSION_CONFIG, "ep.context_file_path", REFUSED, "onnxplug writes no EP-context model"),
    Rule(SESSION_CONFIG, "ep.context_embed_mode", REFUSED, "onnxplug writes no EP-context model"),
    Rule(SESSION_CONFIG, "ep.context_node_name_prefix", REFUSED, "onnxplug writes no EP-context model"),
    Rule(SESSION_CONFIG, "ep.context_model_external_initializers_file_name", REFUSED,
         "onnxplug writes no EP-context model"),
    Rule(SESSION_CONFIG, "ep.share_ep_contexts", REFUSED, "onnxplug has no EP contexts to share", ("0",)),
    Rule(SESSION_CONFIG, "ep.stop_share_ep_contexts", REFUSED, "onnxplug has no EP contexts to share", ("0",)),
    # --- run config entries (add_run_config_entry) ---------------------------------------------
    Rule(RUN_CONFIG, "memory.enable_memory_arena_shrinkage", TUNING, "shrinks onnxruntime's arenas after the "
         "run; host memory follows `enable_cpu_mem_arena` here"),
    Rule(RUN_CONFIG, "gpu_graph_id", TUNING, "selects a captured CUDA graph in onnxruntime; onnxplug captures none"),
    Rule(RUN_CONFIG, "disable_synchronize_execution_providers", TUNING, "onnxplug synchronizes a device's outputs "
         "when it hands them over, whatever the value"),
    # --- CPUExecutionProvider options (the `numpy` provider) ---------------------------------
    Rule(CPU_EP, "use_arena", TUNING, "onnxruntime's CPU arena; host memory follows `SessionOptions."
         "enable_cpu_mem_arena` here"),
    Rule(CPU_EP, "arena_extend_strategy", TUNING, "how onnxruntime's arena grows; onnxplug has no arena chunks"),
    Rule(CPU_EP, "initial_chunk_size_bytes", TUNING, "onnxruntime's arena chunk size; onnxplug has no arena chunks"),
    Rule(CPU_EP, "initial_growth_chunk_size_bytes", TUNING, "onnxruntime's arena chunk size; onnxplug has no "
         "arena chunks"),
    Rule(CPU_EP, "max_dead_bytes_per_chunk", TUNING, "onnxruntime's arena chunk splitting; onnxplug has no arena "
         "chunks"),
    Rule(CPU_EP, "max_mem", TUNING, "onnxruntime's arena size limit; onnxplug has no arena chunks"),
    # --- CUDAExecutionProvider options (the `cupy` provider) ---------------------------------
    Rule(CUDA_EP, "device_id", IMPLEMENTED, f"goes to {_CUPY}: the CUDA device"),
    Rule(CUDA_EP, "gpu_mem_limit", IMPLEMENTED, f"goes to {_CUPY}: bytes its private memory pool may hold"),
    Rule(CUDA_EP, "arena_extend_strategy", TUNING, "how onnxruntime's CUDA arena grows; CuPy's pool grows its own way"),
    Rule(CUDA_EP, "cudnn_conv_algo_search", TUNING, f"how onnxruntime picks cuDNN convolution algorithms; "
         f"{_CUPY} computes convolutions as im2col + cuBLAS products"),
    Rule(CUDA_EP, "cudnn_conv_use_max_workspace", TUNING, f"cuDNN workspace size; {_CUPY} does not use cuDNN"),
    Rule(CUDA_EP, "cudnn_conv1d_pad_to_nc1d", TUNING, f"cuDNN 1-D convolution layout; {_CUPY} does not use cuDNN"),
    Rule(CUDA_EP, "fuse_conv_bias", TUNING, f"cuDNN frontend fusion; {_CUPY} does not use cuDNN"),
    Rule(CUDA_EP, "do_copy_in_default_stream", TUNING, f"which stream onnxruntime copies on; {_CUPY} orders its "
         "copies with its computation"),
    Rule(CUDA_EP, "use_ep_level_unified_stream", TUNING, f"onnxruntime's stream sharing; {_CUPY} uses one stream"),
    Rule(CUDA_EP, "enable_cuda_graph", TUNING, f"captures the run as a CUDA graph in onnxruntime; {_CUPY} "
         "launches kernels one by one, with the same results"),
    Rule(CUDA_EP, "prefer_nhwc", TUNING, "onnxruntime's NHWC kernels; the layout does not change results"),
    Rule(CUDA_EP, "tunable_op_enable", TUNING, f"onnxruntime's kernel tuning; {_CUPY} does not tune kernels"),
    Rule(CUDA_EP, "tunable_op_tuning_enable", TUNING, f"onnxruntime's kernel tuning; {_CUPY} does not tune kernels"),
    Rule(CUDA_EP, "tunable_op_max_tuning_duration_ms", TUNING, f"onnxruntime's kernel tuning; {_CUPY} does not "
         "tune kernels"),
    Rule(CUDA_EP, "sdpa_kernel", TUNING, f"picks onnxruntime's attention kernel; {_CUPY} has one"),
    Rule(CUDA_EP, "use_tf32", TUNING, f"'1' lets onnxruntime multiply float32 in TF32; {_CUPY} multiplies in "
         "full float32 either way"),
    Rule(CUDA_EP, "enable_skip_layer_norm_strict_mode", TUNING, f"'1' makes onnxruntime's SkipLayerNormalization "
         f"accumulate in float32; {_CUPY} computes it one way whatever the value"),
    Rule(CUDA_EP, "gpu_external_alloc", TUNING, f"an allocator for onnxruntime's arena; {_CUPY} allocates from "
         "CuPy's pool"),
    Rule(CUDA_EP, "gpu_external_free", TUNING, f"an allocator for onnxruntime's arena; {_CUPY} allocates from "
         "CuPy's pool"),
    Rule(CUDA_EP, "gpu_external_empty_cache", TUNING, f"an allocator for onnxruntime's arena; {_CUPY} allocates "
         "from CuPy's pool"),
    Rule(CUDA_EP, "user_compute_stream", REFUSED, f"{_CUPY} runs on its own stream; work on the caller's stream "
         "would not be ordered with it"),
    Rule(CUDA_EP, "has_user_compute_stream", REFUSED, f"{_CUPY} runs on its own stream", ("0",)),
)

#: (scope, name) -> rule
RULES: dict[tuple[str, str], Rule] = {(r.scope, r.name): r for r in _RULES}
#: the scopes in the order the documentation lists them
SCOPES = (SESSION_OPTIONS, RUN_OPTIONS, SESSION_CONFIG, RUN_CONFIG, CPU_EP, CUDA_EP)


def names(scope: str, status: str | None = None) -> tuple[str, ...]:
    """The option names of ``scope`` (with ``status`` only, when given)."""
    return tuple(r.name for r in _RULES if r.scope == scope and (status is None or r.status == status))


def value_text(value: Any) -> str:
    """A value as onnxruntime's config strings spell it (booleans as ``'1'``/``'0'``)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(int(value)) if hasattr(value, "__index__") and not isinstance(value, str) else str(value)


def check(scope: str, name: str, value: Any, label: str) -> Rule:
    """The rule of ``name`` in ``scope`` for ``value``: refused options raise (except at their
    accepted values) and tuning ones are logged; ``label`` names the option in messages."""
    rule = RULES.get((scope, name))
    if rule is None:
        raise UnsupportedOptionError(f"{label} is not an onnxruntime option onnxplug knows "
                                     f"(docs/onnxruntime-options.md lists those of {scope})")
    if rule.status == REFUSED:
        if value_text(value) not in rule.accepted:
            only = f" (accepted: {' or '.join(map(repr, rule.accepted))})" if rule.accepted else ""
            raise UnsupportedOptionError(f"{label} = {value!r} is not implemented by onnxplug: {rule.what}{only}")
    elif rule.status == TUNING:
        _log.debug("%s = %r accepted with no effect: %s", label, value, rule.what)
    return rule


def split_provider_options(ort_name: str | None, own: Mapping[str, Any], options: Mapping[str, Any],
                           provider: str) -> dict[str, Any]:
    """The options for a provider: those it declares (``own``) pass through; those of the onnxruntime
    provider it plays (``ort_name``) are checked against the table, and the tuning ones dropped after
    being logged. Any other key stays, for the provider to refuse by name."""
    kept: dict[str, Any] = {}
    for key, value in options.items():
        rule = RULES.get((ort_name or "", key))
        if key in own or rule is None:
            kept[key] = value
            continue
        check(rule.scope, key, value, f"provider option {key!r} of {ort_name} ({provider!r} here)")
        if rule.status != TUNING:
            kept[key] = value
    return kept


def markdown_table() -> str:
    """The table as docs/onnxruntime-options.md shows it, one section per scope."""
    parts = []
    for scope in SCOPES:
        parts.append(f"### {scope}\n\n| option | here | what it does here |\n|---|---|---|")
        for r in (r for r in _RULES if r.scope == scope):
            status = r.status if not r.accepted else f"refused, except {' / '.join(repr(a) for a in r.accepted)}"
            parts.append(f"| `{r.name}` | {status} | {r.what.replace('|', '/')} |")
        parts.append("")
    return "\n".join(parts)
