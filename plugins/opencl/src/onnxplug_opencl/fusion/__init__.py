"""Groups of nodes compiled into one kernel at session creation."""
