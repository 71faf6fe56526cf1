"""HTTP APIs (FastAPI): the worker API of WSO2 SP, the store query API, auth and TLS."""
