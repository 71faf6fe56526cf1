"""Sources: transports that feed a stream (``@source(type='http'|'nats'|'file'|'inMemory'|
'kafka')``); each module's docstring says what it guarantees."""
