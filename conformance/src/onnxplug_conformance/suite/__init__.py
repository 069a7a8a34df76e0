"""The suite's own test modules, collected only in a run with ``--provider`` (see ..plugin)."""
