"""Session and run options, spelled as onnxruntime spells them.

Which attributes and config entries are implemented, accepted as tuning only (logged, no effect)
or refused is the table of :mod:`onnxplug.option_rules`, which setting an attribute or adding a
config entry consults; a name it does not have is refused. onnxruntime's option methods we lack
raise :class:`~onnxplug.errors.UnsupportedOptionError` when called.
"""

from __future__ import annotations

import enum
import functools
import operator
from typing import Any

from onnxplug.errors import OptionValueError
from onnxplug.errors import refuse_call as _refuse_call
from onnxplug.option_rules import RUN_CONFIG, RUN_OPTIONS, SESSION_CONFIG, SESSION_OPTIONS, check
from onnxplug.ort_functions import ExecutionOrder


class GraphOptimizationLevel(enum.IntEnum):
    """How much the graph optimizer does, as onnxruntime's enum of the same name."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """onnxruntime's execution modes; only sequential execution is implemented."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


#: Session config keys this runtime reads, with what they do.
SUPPORTED_CONFIG_KEYS = {
    "session.disable_cpu_ep_fallback": "'1' fails session creation when the requested providers leave nodes unclaimed",
    "session.record_ep_graph_assignment_info": "'1' keeps the provider assignment for "
                                                "InferenceSession.get_provider_graph_assignment_info()",
    "session.onnxplug.max_allocation_bytes": "bytes one node may allocate (default: half of physical memory; "
                                             "'0': no limit); more fails with AllocationLimitError before allocating",
}

# attributes that take an integer from 0 up (the enums included), checked as onnxruntime's typed
# setters check them
_COUNTS = ("inter_op_num_threads", "execution_mode", "execution_order")


class _Strict:
    """Attribute setting by the table of :mod:`onnxplug.option_rules`: implemented and tuning
    attributes are kept (tuning ones logged at verbose severity), refused values raise, and so do
    names the table does not have."""

    _scope = ""
    #: onnxruntime's defaults of the attributes __init__ does not set (tuning and refused ones)
    _defaults: dict[str, Any] = {}
    #: onnxruntime's methods of the class that this runtime does not implement
    _unimplemented_methods: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_"):
            label = f"{type(self).__name__}.{name}"
            if name in _COUNTS:
                try:
                    count = -1 if isinstance(value, bool) else operator.index(value)
                except TypeError:
                    count = -1
                if count < 0:
                    raise OptionValueError(f"{label} takes an integer from 0 up, not {value!r}")
            check(self._scope, name, value, label)
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        if name in self._defaults:
            return self._defaults[name]
        if name in self._unimplemented_methods:
            return functools.partial(_refuse_call, f"{type(self).__name__}.{name}")
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")


class SessionOptions(_Strict):
    """Options for an :class:`~onnxplug.InferenceSession`, as onnxruntime's ``SessionOptions``."""

    _scope = SESSION_OPTIONS
    _defaults = {"enable_mem_pattern": True, "enable_mem_reuse": True, "execution_mode": ExecutionMode.ORT_SEQUENTIAL,
                 "execution_order": ExecutionOrder.DEFAULT, "inter_op_num_threads": 0,
                 "use_deterministic_compute": False, "use_per_session_threads": True}
    _unimplemented_methods = ("add_initializer", "add_external_initializers",
                              "add_external_initializers_from_files_in_memory",
                              "add_free_dimension_override_by_denotation",
                              "register_custom_ops_library", "set_load_cancellation_flag",
                              "set_ep_context_data_read_func", "clear_ep_context_data_read_func")

    def __init__(self) -> None:
        self.graph_optimization_level: GraphOptimizationLevel = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.intra_op_num_threads: int = 0
        self.enable_profiling: bool = False
        self.optimized_model_filepath: str = ""
        self.log_severity_level: int = -1  # -1: the default severity (onnxplug.set_default_logger_severity)
        self.log_verbosity_level: int = 0
        self.logid: str = ""
        self.profile_file_prefix: str = "onnxplug_profile"
        #: Keep freed host memory for the next run (process-wide; see :mod:`onnxplug.host_memory`).
        self.enable_cpu_mem_arena: bool = True
        self._config: dict[str, str] = {}
        self._free_dimensions: dict[str, int] = {}

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Fix the symbolic input dimension ``dim_name`` to ``dim_value`` for sessions created with
        these options: shapes become static, and feeds of another size are refused. A name no input
        of the model has fails session creation (never silently ignored)."""
        try:
            size = -1 if isinstance(dim_value, bool) else operator.index(dim_value)
        except TypeError:
            size = -1
        if size < 0:
            raise OptionValueError(f"add_free_dimension_override_by_name({dim_name!r}, {dim_value!r}): "
                                   f"the size must be a non-negative integer")
        self._free_dimensions[str(dim_name)] = size

    @property
    def free_dimension_overrides(self) -> dict[str, int]:
        """The symbolic dimension sizes set with ``add_free_dimension_override_by_name``."""
        return dict(self._free_dimensions)

    def add_session_config_entry(self, key: str, value: str) -> None:
        """Set a session config entry, as :mod:`onnxplug.option_rules` says: entries that change what
        onnxplug does not implement, and keys it does not know, are refused."""
        if key not in SUPPORTED_CONFIG_KEYS:
            check(SESSION_CONFIG, key, value, f"session config entry {key!r}")
        if key == "session.onnxplug.max_allocation_bytes":
            from onnxplug.allocation_limit import parse_limit

            parse_limit(value)  # a bad value fails here, not at session creation
        self._config[key] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        """The value of a config entry set earlier."""
        if key not in self._config:
            raise KeyError(f"session config entry {key!r} is not set")
        return self._config[key]

    # provider selection without providers= (onnxplug.ep_devices)
    def add_provider_for_devices(self, ep_devices: Any, provider_options: Any) -> None:
        """Run sessions made with these options on the provider of ``ep_devices`` (from ``get_ep_devices()``)."""
        from onnxplug import ep_devices as _ep

        _ep.add_provider_for_devices(self, ep_devices, provider_options)

    def add_provider(self, provider_name: str, provider_options: Any) -> None:
        """Run sessions made with these options on ``provider_name`` (after any added before)."""
        from onnxplug import ep_devices as _ep

        _ep.add_provider(self, provider_name, provider_options)

    def set_provider_selection_policy(self, policy: Any) -> None:
        """Pick providers by an ``OrtExecutionProviderDevicePolicy`` (see :mod:`onnxplug.ep_devices`)."""
        from onnxplug import ep_devices as _ep

        _ep.set_policy(self, policy)

    def set_provider_selection_policy_delegate(self, delegate: Any) -> None:
        """Pick providers with ``delegate(ep_devices, model_metadata, runtime_metadata, max_selections)``."""
        from onnxplug import ep_devices as _ep

        _ep.set_delegate(self, delegate)

    def has_providers(self) -> bool:
        """Whether these options select providers on their own."""
        from onnxplug import ep_devices as _ep

        return _ep.has_providers(self)

    @property
    def fallback_disabled(self) -> bool:
        """True when ``session.disable_cpu_ep_fallback`` is ``"1"``."""
        return self._config.get("session.disable_cpu_ep_fallback", "0") == "1"


class RunOptions(_Strict):
    """Options for one ``run`` call, as onnxruntime's ``RunOptions``."""

    _scope = RUN_OPTIONS
    _defaults = {"terminate": False, "only_execute_path_to_fetches": False}
    _unimplemented_methods = ("add_active_adapter",)

    def __init__(self) -> None:
        self.log_severity_level: int = -1  # -1: the default severity (onnxplug.set_default_logger_severity)
        self.log_verbosity_level: int = 0
        self.logid: str = ""
        self.run_tag: str = ""
        self._config: dict[str, str] = {}

    def add_run_config_entry(self, key: str, value: str) -> None:
        """Set a per-run config entry, as :mod:`onnxplug.option_rules` says (onnxplug reads none:
        the ones it knows only tune onnxruntime, others are refused)."""
        check(RUN_CONFIG, key, value, f"run config entry {key!r}")
        self._config[key] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        """The value of a run config entry set earlier."""
        if key not in self._config:
            raise KeyError(f"run config entry {key!r} is not set")
        return self._config[key]
