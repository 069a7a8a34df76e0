"""onnxruntime's log severities (0 verbose, 1 info, 2 warning, 3 error, 4 fatal) over Python's
``logging`` and ``warnings``.

onnxplug reports through the ``onnxplug`` loggers and, for what a user should see by default (a
provider that is not available, a plugin that fails to load), ``RuntimeWarning``. Both follow the
severity in force: ``SessionOptions.log_severity_level`` while a session is created, else the
default that :func:`set_default_logger_severity` sets. Until one of them is set, warnings show (as
at onnxruntime's default, 2) and log records are left to Python's ``logging`` configuration alone.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import operator
import warnings
from typing import Any, Iterator

from onnxplug.errors import OptionValueError

#: onnxruntime's severities and the ``logging`` levels they select.
SEVERITY_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR, 4: logging.CRITICAL}
WARNING = 2

_default: dict[str, int | None] = {"severity": None}  # None: never set
_session_severity: contextvars.ContextVar[int | None] = contextvars.ContextVar("onnxplug_log_severity", default=None)


def check_severity(value: Any, what: str) -> int:
    """``value`` as a severity 0-4; an OptionValueError naming ``what`` otherwise."""
    try:
        severity = -1 if isinstance(value, bool) else operator.index(value)
    except TypeError:
        severity = -1
    if severity not in SEVERITY_LEVELS:
        raise OptionValueError(f"{what} must be 0 (verbose), 1 (info), 2 (warning), 3 (error) or 4 (fatal), "
                               f"not {value!r}")
    return severity


def explicit_severity() -> int | None:
    """The severity set for what happens now: the session being created's, else the default one
    :func:`set_default_logger_severity` set, else None."""
    current = _session_severity.get()
    return _default["severity"] if current is None else current


def severity() -> int:
    """The severity in force (2, warnings, where none was set)."""
    current = explicit_severity()
    return WARNING if current is None else current


def set_default_logger_severity(level: int) -> None:
    """onnxruntime's ``set_default_logger_severity``: report messages of ``level`` (0 verbose ...
    4 fatal) and worse from now on, outside sessions whose options set their own."""
    _default["severity"] = check_severity(level, "set_default_logger_severity")


def set_default_logger_verbosity(level: int) -> None:
    """onnxruntime's ``set_default_logger_verbosity`` (how much detail verbose messages give, at
    severity 0). onnxplug's verbose messages have a single level of detail: every level from 0 up
    shows them all, so this only checks ``level``."""
    try:
        verbosity = -1 if isinstance(level, bool) else operator.index(level)
    except TypeError:
        verbosity = -1
    if verbosity < 0:
        raise OptionValueError(f"set_default_logger_verbosity takes an integer from 0 up, not {level!r}")


@contextlib.contextmanager
def session_severity(level: Any) -> Iterator[None]:
    """Apply a session's ``log_severity_level`` to what onnxplug reports while it is created (-1,
    the default, leaves the default severity in force, as in onnxruntime)."""
    own = None if level == -1 and not isinstance(level, bool) else check_severity(
        level, "SessionOptions.log_severity_level (-1 for the default)")
    token = _session_severity.set(own)
    try:
        yield
    finally:
        _session_severity.reset(token)


class _SeverityFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        current = explicit_severity()
        return current is None or record.levelno >= SEVERITY_LEVELS[current]


_FILTER = _SeverityFilter()


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` (an ``onnxplug.*`` name) whose records follow the severity set,
    if one is. Python's own level and handlers apply on top: to see info messages, configure
    ``logging`` as well (e.g. ``logging.basicConfig(level=logging.INFO)``)."""
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger


def warn(message: str, stacklevel: int = 1) -> None:
    """A RuntimeWarning (onnxruntime's warning severity, 2), unless the severity in force is higher."""
    if severity() <= WARNING:
        warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)
