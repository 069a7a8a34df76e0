"""Session and run options, spelled as onnxruntime spells them.

Options that onnxruntime has but this runtime does not implement raise
:class:`~onnxplug.errors.UnsupportedOptionError` when set to anything but the behaviour we have, and
onnxruntime's option methods we lack raise it when called.
"""

from __future__ import annotations

import enum
import functools
import operator
from typing import Any, NoReturn

from onnxplug.errors import OptionValueError, UnsupportedOptionError


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
}

# onnxruntime SessionOptions attributes we accept only at the values matching our behaviour, the
# default first. Nodes run one after another on the calling thread: an inter-op pool of 0 (the
# default) or 1 thread says just that.
_FIXED_ATTRIBUTES: dict[str, tuple[Any, ...]] = {
    "execution_mode": (ExecutionMode.ORT_SEQUENTIAL,),
    "inter_op_num_threads": (0, 1),
    "enable_mem_pattern": (True,),
    "use_deterministic_compute": (False,),
    "enable_mem_reuse": (True,),
}


def _refuse_call(method: str, *args: Any, **kwargs: Any) -> NoReturn:
    """What an onnxruntime method this runtime does not implement does when called."""
    raise UnsupportedOptionError(f"{method}() is not implemented by onnxplug")


class _Strict:
    """Attribute setting that refuses what the class does not implement."""

    _implemented: tuple[str, ...] = ()
    #: attribute -> the values we accept, the default first
    _fixed: dict[str, tuple[Any, ...]] = {}
    #: onnxruntime's methods of the class that this runtime does not implement
    _unimplemented_methods: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._implemented or name.startswith("_"):
            object.__setattr__(self, name, value)
        elif name in self._fixed:
            accepted = self._fixed[name]
            if value not in accepted:
                raise UnsupportedOptionError(
                    f"{type(self).__name__}.{name} = {value!r} is not implemented by onnxplug "
                    f"(only {' or '.join(repr(a) for a in accepted)})")
            self.__dict__.setdefault("_fixed_values", {})[name] = value
        else:
            raise UnsupportedOptionError(f"{type(self).__name__}.{name} is not an option onnxplug implements; "
                                         f"supported: {', '.join(self._implemented)}")

    def __getattr__(self, name: str) -> Any:
        if name in self._fixed:
            return self.__dict__.get("_fixed_values", {}).get(name, self._fixed[name][0])
        if name in self._unimplemented_methods:
            return functools.partial(_refuse_call, f"{type(self).__name__}.{name}")
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")


class SessionOptions(_Strict):
    """Options for an :class:`~onnxplug.InferenceSession`, as onnxruntime's ``SessionOptions``."""

    _implemented = ("graph_optimization_level", "intra_op_num_threads", "enable_profiling",
                    "optimized_model_filepath", "log_severity_level", "log_verbosity_level",
                    "logid", "profile_file_prefix", "enable_cpu_mem_arena")
    _fixed = _FIXED_ATTRIBUTES
    _unimplemented_methods = ("add_initializer", "add_external_initializers",
                              "add_external_initializers_from_files_in_memory",
                              "add_free_dimension_override_by_denotation",
                              "register_custom_ops_library", "set_load_cancellation_flag")

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
        """Set a session config entry; keys this runtime does not read are refused."""
        if key not in SUPPORTED_CONFIG_KEYS:
            raise UnsupportedOptionError(f"session config key {key!r} is not implemented by onnxplug; "
                                         f"supported: {', '.join(SUPPORTED_CONFIG_KEYS)}")
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

    _implemented = ("log_severity_level", "log_verbosity_level", "logid", "run_tag")
    _fixed = {"terminate": (False,), "only_execute_path_to_fetches": (False,)}
    _unimplemented_methods = ("add_active_adapter",)

    def __init__(self) -> None:
        self.log_severity_level: int = -1  # -1: the default severity (onnxplug.set_default_logger_severity)
        self.log_verbosity_level: int = 0
        self.logid: str = ""
        self.run_tag: str = ""

    def add_run_config_entry(self, key: str, value: str) -> None:
        """onnxruntime's per-run config entries: this runtime reads none, so every key is refused."""
        raise UnsupportedOptionError(f"run config key {key!r} is not implemented by onnxplug (it reads no run "
                                     f"config keys)")

    def get_run_config_entry(self, key: str) -> str:
        """No run config entry can be set (see ``add_run_config_entry``)."""
        raise KeyError(f"run config entry {key!r} is not set")
