"""One module per op (``op_<name>.py``); every module here is imported when the registry loads."""
