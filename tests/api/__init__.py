"""The worker API tests: a package, so the worker fixture they share stops when they end
(pytest gives a package-scoped fixture session scope in a folder without ``__init__.py``)."""
