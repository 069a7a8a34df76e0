"""Session and run options, spelled as onnxruntime spells them.

Options that onnxruntime has but this runtime does not implement raise
:class:`~onnxplug.errors.UnsupportedOptionError` when set to anything but the behaviour we have.
"""

from __future__ import annotations

import enum
from typing import Any

from onnxplug.errors import UnsupportedOptionError


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
}

# onnxruntime SessionOptions attributes we accept only at the value matching our behaviour.
_FIXED_ATTRIBUTES: dict[str, Any] = {
    "execution_mode": ExecutionMode.ORT_SEQUENTIAL,
    "inter_op_num_threads": 0,
    "enable_mem_pattern": True,
    "use_deterministic_compute": False,
    "enable_mem_reuse": True,
}


class _Strict:
    """Attribute setting that refuses what the class does not implement."""

    _implemented: tuple[str, ...] = ()
    _fixed: dict[str, Any] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._implemented or name.startswith("_"):
            object.__setattr__(self, name, value)
        elif name in self._fixed:
            if value != self._fixed[name]:
                raise UnsupportedOptionError(
                    f"{type(self).__name__}.{name} = {value!r} is not implemented by onnxplug "
                    f"(only {self._fixed[name]!r} is)")
        else:
            raise UnsupportedOptionError(f"{type(self).__name__}.{name} is not an option onnxplug implements; "
                                         f"supported: {', '.join(self._implemented)}")

    def __getattr__(self, name: str) -> Any:
        if name in self._fixed:
            return self._fixed[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")


class SessionOptions(_Strict):
    """Options for an :class:`~onnxplug.InferenceSession`, as onnxruntime's ``SessionOptions``."""

    _implemented = ("graph_optimization_level", "intra_op_num_threads", "enable_profiling",
                    "optimized_model_filepath", "log_severity_level", "log_verbosity_level",
                    "logid", "profile_file_prefix", "enable_cpu_mem_arena")
    _fixed = _FIXED_ATTRIBUTES

    def __init__(self) -> None:
        self.graph_optimization_level: GraphOptimizationLevel = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.intra_op_num_threads: int = 0
        self.enable_profiling: bool = False
        self.optimized_model_filepath: str = ""
        self.log_severity_level: int = 2
        self.log_verbosity_level: int = 0
        self.logid: str = ""
        self.profile_file_prefix: str = "onnxplug_profile"
        #: Keep freed host memory for the next run (process-wide; see :mod:`onnxplug.host_memory`).
        self.enable_cpu_mem_arena: bool = True
        self._config: dict[str, str] = {}

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

    @property
    def fallback_disabled(self) -> bool:
        """True when ``session.disable_cpu_ep_fallback`` is ``"1"``."""
        return self._config.get("session.disable_cpu_ep_fallback", "0") == "1"


class RunOptions(_Strict):
    """Options for one ``run`` call, as onnxruntime's ``RunOptions``."""

    _implemented = ("log_severity_level", "log_verbosity_level", "logid", "run_tag")
    _fixed = {"terminate": False, "only_execute_path_to_fetches": False}

    def __init__(self) -> None:
        self.log_severity_level: int = 2
        self.log_verbosity_level: int = 0
        self.logid: str = ""
        self.run_tag: str = ""
