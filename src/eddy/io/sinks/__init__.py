"""Sinks: transports a stream's events leave by (``@sink(type='log'|'http'|'nats'|'file'|
'inMemory')``, optionally over several ``@destination``\\ s); each module's docstring says
what it guarantees."""
