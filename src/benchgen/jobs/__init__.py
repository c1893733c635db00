"""Background work: the worker loop that claims jobs and the handlers that execute them."""
